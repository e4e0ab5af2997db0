// The audit trail: an append-only timeline per batch of every state transition and every remote
// call, written in the same transaction as the state it explains. No join links, no secrets.
import { bigint, bigserial, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { batchClasses } from './batch-classes.ts';
import type { EventDetail } from './stored.ts';

export const BATCH_EVENT_TYPES = [
  'received',
  'transition',
  'remote_call',
  'retry_requested',
  'repair',
  'abandoned',
  'abandon_undone',
  'updated',
  'cancel_requested',
  'reopened',
  'stale',
  'class_edited',
  'class_edit_refused',
  'class_ruled_out',
] as const;
export type BatchEventType = (typeof BATCH_EVENT_TYPES)[number];

export const batchEvents = pgTable(
  'batch_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    batchRowId: bigint('batch_row_id', { mode: 'number' })
      .notNull()
      .references(() => batchClasses.id, { onDelete: 'cascade' }),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    type: text('type').$type<BatchEventType>().notNull(),
    fromState: text('from_state'),
    toState: text('to_state'),
    /** Remote operation (addClass, editClass, getClass, listClasses) for remote_call events. */
    operation: text('operation'),
    httpStatus: integer('http_status'),
    bodyStatus: integer('body_status'),
    durationMs: integer('duration_ms'),
    /** `ok`, or the failure class: not_sent, rejected, throttled, outcome_unknown. */
    outcome: text('outcome'),
    error: text('error'),
    attempt: integer('attempt'),
    workerId: text('worker_id'),
    classId: text('class_id'),
    /** Small structured context: a resolution's decision and candidates, a repair's category. */
    detail: jsonb('detail').$type<EventDetail>(),
    /**
     * The OpenTelemetry trace id (32 hex digits) of the span active when the event was written: the
     * HTTP request, the queue job or the library caller's own. Null when nothing was traced.
     */
    traceId: text('trace_id'),
  },
  (t) => [index('batch_events_batch_idx').on(t.batchRowId, t.id), index('batch_events_at_idx').on(t.at)],
);

export type BatchEvent = typeof batchEvents.$inferSelect;
export type NewBatchEvent = typeof batchEvents.$inferInsert;
