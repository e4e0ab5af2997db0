// Counts kept as the rows change, so `status`, the metrics and the lane gauges read a few hundred
// rows, not a million. Each table is append-only: a trigger on the counted table (migrations/0013)
// adds a signed delta row in the same transaction as the change, and the worker's housekeeping folds
// the deltas into one row per key (src/mapping/compact-counts.ts). No writer ever
// updates a shared counter row, so two transactions never wait on each other for a count. A count is
// the sum over its key.
import { bigint, bigserial, index, text } from 'drizzle-orm/pg-core';
import { pgTable } from 'drizzle-orm/pg-core';
import { batchLane, batchState } from './batch-classes.ts';

/**
 * batch_classes rows by institute, state and stored lane. `id` only gives each delta a primary key, as
 * every table has: PostgreSQL refuses a DELETE (the fold, the truncate trigger) on a table without a
 * replica identity once a publication covers it (FOR ALL TABLES: change data capture, a managed
 * blue/green upgrade), and a subscriber applies each deleted row by its key, not by a scan.
 */
export const batchCounts = pgTable(
  'batch_counts',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    instituteId: text('institute_id').notNull(),
    state: batchState('state').notNull(),
    lane: batchLane('lane').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  // Reads sum the deltas from this index alone (index-only): a burst of deltas leaves its emptied
  // pages in the heap after the fold (vacuum gives them back rarely), and a sequential read would
  // read them all; vacuum does clear the index of them.
  (t) => [index('batch_counts_key_idx').on(t.state, t.lane, t.instituteId, t.n)],
);

/** webhook_messages rows by status (`id`: as batch_counts'). */
export const webhookMessageCounts = pgTable(
  'webhook_message_counts',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    status: text('status').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [index('webhook_message_counts_key_idx').on(t.status, t.n)],
);
