// Counts kept as the rows change, so `status`, the metrics and the lane gauges read a few hundred
// rows, not a million. Each table is append-only: a trigger on the counted table (migrations/0013)
// adds a signed delta row in the same transaction as the change, and the worker's housekeeping folds
// the deltas into one row per key (src/mapping/counts.ts). No writer ever updates a shared counter
// row, so two transactions never wait on each other for a count. A count is the sum over its key.
import { bigint, text } from 'drizzle-orm/pg-core';
import { pgTable } from 'drizzle-orm/pg-core';
import { batchLane, batchState } from './batch-classes.ts';

/** batch_classes rows by institute, state and stored lane. */
export const batchCounts = pgTable('batch_counts', {
  instituteId: text('institute_id').notNull(),
  state: batchState('state').notNull(),
  lane: batchLane('lane').notNull(),
  n: bigint('n', { mode: 'number' }).notNull(),
});

/** webhook_messages rows by status. */
export const webhookMessageCounts = pgTable('webhook_message_counts', {
  status: text('status').notNull(),
  n: bigint('n', { mode: 'number' }).notNull(),
});
