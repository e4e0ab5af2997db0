// The mapping module's types: the schema's words (their glossary: src/db/schema/index.ts), a batch's
// key, its row and a runner's lease.
import type { BatchEventType, BatchRow, BatchState } from '../db/schema/index.ts';

export { BATCH_EVENT_TYPES, BATCH_LANES, BATCH_STATES, QUEUE_LANES, TERMINAL_STATES, UNDER_WAY_STATES } from '../db/schema/index.ts';
export { CLASS_FIELDS, changedFields, classFieldsOf, classFieldsSchema, copyField, isClassField, withoutClassFields } from '../db/schema/index.ts';
export type {
  BatchEventType,
  ClassFieldName,
  ClassFields,
  ClassValues,
  BatchLane,
  BatchState,
  Candidate,
  EventDetail,
  ListName,
  NameMatch,
  QueueLane,
  Review,
  ReviewEvidence,
  StoredEvent,
} from '../db/schema/index.ts';

/** A batch, as the integrator names it: unique within its institute. */
export interface BatchKey {
  instituteId: string;
  batchId: string;
}

/** One row of the mapping table, its jsonb columns typed. */
export type MappingRow = BatchRow;

/** A runner's hold on one batch: every write it makes names this epoch. */
export interface Lease {
  rowId: number;
  batchId: string;
  epoch: number;
  owner: string;
}

/** How a remote call ended, as the audit trail records it. */
export type CallOutcome = 'ok' | 'not_sent' | 'rejected' | 'throttled' | 'outcome_unknown' | 'credentials_refused';

interface EventBase {
  at?: Date;
  attempt?: number | null;
  workerId?: string | null;
  classId?: string | null;
  detail?: Record<string, unknown> | null;
}

/** A line of a batch's audit trail, before it is stored. */
export type AuditEvent =
  | (EventBase & {
      type: 'remote_call';
      operation: string;
      outcome: CallOutcome;
      httpStatus: number | null;
      bodyStatus: number | null;
      durationMs: number;
      error: string | null;
    })
  | (EventBase & { type: Exclude<BatchEventType, 'remote_call'>; fromState?: BatchState | null; toState?: BatchState | null; error?: string | null });

/** A stored line of a batch's audit trail. */
export interface TimelineEntry {
  id: number;
  at: Date;
  type: BatchEventType;
  fromState: string | null;
  toState: string | null;
  operation: string | null;
  httpStatus: number | null;
  bodyStatus: number | null;
  durationMs: number | null;
  outcome: string | null;
  error: string | null;
  attempt: number | null;
  workerId: string | null;
  classId: string | null;
  detail: Record<string, unknown> | null;
  /** The trace id of the span that wrote it (the request, job or caller), null when nothing was traced. */
  traceId: string | null;
}
