// Why a sync job stopped, as one closed set of kinds, and the one table that says what the queue
// does about each (`queueAction`). Every error a job ends with is classified here, once
// (`failureOf`): the remote's own errors keep the kind they were given at the boundary
// (src/classroom/errors.ts); the sync layer's carry theirs (SyncError, the base class of this
// layer's errors); the mapping table's lease loss is `lease_lost`; a driver error is `database`, or
// `database_unavailable` when the connection itself failed (told by its error code or, for a
// dropped connection, the driver's message: src/db/connection-loss.ts); anything else is
// `internal`, with its cause kept.
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { CONNECTION_CODES, isConnectionLoss } from '../db/connection-loss.ts';
import { type FailureKind, isClassroomError } from '../classroom/errors.ts';
import { type BatchState, LeaseLostError } from '../mapping/index.ts';

export { LeaseLostError };

export type SyncFailureKind =
  /** The remote's, classified at the boundary: see FailureKind. */
  | FailureKind
  /** Not this run's turn: another runner holds the batch, or an add-class must settle before the listing is read. */
  | 'busy'
  /** No account serves the batch's institute (a restart with a new accounts file may add one). */
  | 'no_account'
  /** A lower lane's job found no rate-limit slot near enough: it yields to live work and asks again. */
  | 'slot_wait'
  /** Something we wrote is not visible on the remote yet (read lag). */
  | 'not_visible_yet'
  /** Another runner took the batch over; this run stopped writing. */
  | 'lease_lost'
  /** An add-class of unknown outcome the listing cannot settle: the batch is in needs_review. */
  | 'ambiguous_create'
  /**
   * The institute listing that settles an add-class of unknown outcome was refused (a 4xx): retried
   * while attempts last; after the last, the batch is `needs_review` (a class may exist).
   */
  | 'listing_refused'
  /** The remote no longer knows a class we stored (404 past SYNC_READ_LAG). */
  | 'class_unknown'
  /** The batch is not recorded in PostgreSQL (published to the queue by hand?). */
  | 'not_recorded'
  /** The remote answered something that contradicts itself (another class's record, a link that did not stick). */
  | 'remote_inconsistent'
  /** A 403 whose probe failed too, so whether the key or the batch was refused cannot be told yet. */
  | 'unconfirmed_refusal'
  /**
   * A 403 about this batch: a harmless read with the same key worked. Retried while attempts last, not
   * failed at once: a refusal of the key that ended between the 403 and the read looks the same.
   */
  | 'forbidden'
  /** PostgreSQL refused a statement. */
  | 'database'
  /**
   * PostgreSQL could not be reached or dropped the connection (a restart, a failover, a cut): not
   * the batch's fault, so no attempt is used; it runs again within a couple of seconds, and moves
   * again as soon as the database is back.
   */
  | 'database_unavailable'
  /** Anything else: a bug; the cause is kept. */
  | 'internal';

/**
 * What the queue does about a job that stopped:
 * - `delay`: run it again later, using no attempt; the batch is unchanged;
 * - `retry`: run it again after a backoff, using an attempt; after the last the batch is `failed`
 *   (`needs_review` when it may have a class: src/mapping/doubt.ts);
 * - `outlast`: like `retry`, but once the attempts are used the job keeps coming back every
 *   SYNC_BACKOFF_MAX, using none: the remote is unavailable, nothing is wrong with the batch, and
 *   however long that lasts the batch is not written off for it;
 * - `fail`: stop; the batch is `failed`, or `needs_review` when it may have a class (an operator's
 *   `retry` resumes either).
 */
export type QueueAction = 'delay' | 'retry' | 'outlast' | 'fail';

const ACTIONS: Record<SyncFailureKind, QueueAction> = {
  not_sent: 'outlast',
  outcome_unknown: 'outlast',
  unconfirmed_refusal: 'outlast',
  remote_inconsistent: 'retry',
  listing_refused: 'retry',
  forbidden: 'retry',
  database: 'retry',
  internal: 'retry',
  throttled: 'delay',
  credentials_refused: 'delay',
  busy: 'delay',
  no_account: 'delay',
  slot_wait: 'delay',
  not_visible_yet: 'delay',
  lease_lost: 'delay',
  database_unavailable: 'delay',
  rejected: 'fail',
  class_unknown: 'fail',
  ambiguous_create: 'fail',
  not_recorded: 'fail',
};

/** The one mapping from a kind of failure to what the queue does. */
export function queueAction(kind: SyncFailureKind): QueueAction {
  return ACTIONS[kind];
}

/** The base class of the sync layer's errors: its kind, a machine-readable reason, and for delays how long. */
export class SyncError extends Error {
  override readonly name: string = 'SyncError';
  constructor(
    readonly kind: SyncFailureKind,
    readonly reason: string,
    message: string,
    options: { cause?: unknown; delayMs?: number | undefined } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.delayMs = options.delayMs;
  }
  readonly delayMs: number | undefined;
}

/** Try again after `delayMs` without counting an attempt (a lease held elsewhere, a settle delay, a 429, a refused key). */
export class DeferError extends SyncError {
  override readonly name: string = 'DeferError';
  declare readonly delayMs: number;
  constructor(delayMs: number, message: string, kind: SyncFailureKind = 'busy', reason = 'lease_busy') {
    super(kind, reason, message, { delayMs });
  }
}

/**
 * Something we wrote is not visible on the remote yet (read lag), or would not be by the account's
 * read schedule (`read_schedule`: nothing was sent): the job waits, freeing its slot.
 */
export class NotVisibleYetError extends DeferError {
  override readonly name = 'NotVisibleYetError';
  constructor(delayMs: number, message: string, reason: 'read_lag' | 'read_lag_exceeded' | 'read_schedule' = 'read_lag') {
    super(delayMs, message, 'not_visible_yet', reason);
  }
}

/** The batch reached `failed` or `needs_review`; retrying the job cannot help (`classroom-sync retry` can). */
export class PermanentSyncError extends SyncError {
  override readonly name = 'PermanentSyncError';
}

/**
 * How a run that held the lease ended short of rest: the classified error it stopped with (its kind,
 * reason and delay, and its `cause`), and the batch's state then, which says where the job goes next.
 * Errors thrown before a run holds the lease are never this: no state of theirs is known.
 */
export class RunStoppedError extends SyncError {
  override readonly name = 'RunStoppedError';
  constructor(
    readonly stopped: SyncError,
    readonly batchState: BatchState,
  ) {
    super(stopped.kind, stopped.reason, stopped.message, { cause: stopped, delayMs: stopped.delayMs });
  }
}

/** How a run's error is classified: one shape for logs, the mapping table and the queue. */
export interface Failure {
  kind: SyncFailureKind;
  reason: string;
  message: string;
  /** For `delay`: how long. */
  delayMs: number | undefined;
}

/** Lease lost: the new holder runs soon; this job comes back in a second to find it busy or done. */
const LEASE_LOST_DELAY_MS = 1_000;

/** How soon a job stopped by an unreachable database comes back: 1–2 s, spread so they do not return at once. */
const databaseRetryMs = () => 1_000 + Math.round(Math.random() * 1_000);

export function failureOf(error: unknown): Failure {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof SyncError) return { kind: error.kind, reason: error.reason, message, delayMs: error.delayMs };
  if (isClassroomError(error)) return { kind: error.kind, reason: error.reason, message, delayMs: undefined };
  if (error instanceof LeaseLostError) return { kind: 'lease_lost', reason: 'newer_epoch', message, delayMs: LEASE_LOST_DELAY_MS };
  const database = databaseFailure(error);
  if (database) return database;
  return { kind: 'internal', reason: error instanceof Error ? error.name : typeof error, message, delayMs: undefined };
}

/**
 * A failed statement (drizzle wraps the driver's error: the cause says why) or a driver error
 * (a `severity` means PostgreSQL itself answered). The message is the cause's, never drizzle's
 * "Failed query: … params: …": the parameters of a write can hold a join link.
 */
function databaseFailure(error: unknown): Failure | undefined {
  const wrapped = error instanceof DrizzleQueryError;
  const cause: unknown = wrapped ? error.cause : error;
  const code = (cause as { code?: unknown } | undefined)?.code;
  const fromPg = (cause as { severity?: unknown } | undefined)?.severity !== undefined;
  if (!wrapped && !fromPg && !(typeof code === 'string' && CONNECTION_CODES.has(code))) return undefined;
  const why = cause instanceof Error ? cause.message : 'no answer';
  const reason = typeof code === 'string' ? `pg_${code}` : 'pg_unavailable';
  if (isConnectionLoss(error)) return { kind: 'database_unavailable', reason, message: `PostgreSQL unavailable: ${why}`, delayMs: databaseRetryMs() };
  return { kind: 'database', reason, message: `PostgreSQL: ${why}`, delayMs: undefined };
}
