// What a failure of a remote call can be, in what the sync state machine needs to know: may the
// request have taken effect, and may it be sent again? The kinds and reasons are defined here; each
// failure gets its kind once, where it is seen (transport.ts, answer.ts, call.ts, client.ts).

import type { ClassroomOperation } from './operations.ts';

export type { ClassroomOperation } from './operations.ts';

export type FailureKind =
  /**
   * The request never left (connection refused, DNS, no rate-limit slot): safe to send again. It
   * uses an attempt; once they are used up the batch waits rather than failing (src/sync/errors.ts).
   */
  | 'not_sent'
  /** The remote refused it for good (4xx: credentials, headers, bad input, unknown class): retrying will not help. */
  | 'rejected'
  /** The remote said "too many requests": nothing was done; wait, then retry without counting an attempt. */
  | 'throttled'
  /** The request may have taken effect (timeout, reset after sending, 5xx, unreadable 2xx body). */
  | 'outcome_unknown'
  /**
   * The remote refused the credentials themselves (HTTP 401), or the fleet's credentials breaker is
   * open and the request was not sent. Nothing about the batch is wrong: wait, use no attempt.
   */
  | 'credentials_refused';

/**
 * What exactly happened, for machines (logs, tests, the audit trail's reasoning): the kind says what
 * a retry may do, the reason says why.
 */
export type FailureReason =
  /** Not sent: no connection could be opened, or an id unsafe to put in a URL. */
  | 'connect_failed'
  | 'unsafe_id'
  /** Not sent: the shared budget had no slot within the limiter's longest wait (a full budget). */
  | 'rate_limit_full'
  /** Not sent: a lower lane's call found no slot near enough and yields to live work. */
  | 'lane_deferred'
  /** Not sent: the rate limiter could not be asked (Redis, which holds the budget, failed). */
  | 'limiter_unavailable'
  /** Not sent (a credentials_refused): the API key is known to be refused, the breaker is open. */
  | 'breaker_open'
  /** Sent, outcome unknown: no answer in time, the connection dropped, an answer we cannot read. */
  | 'timeout'
  | 'connection_lost'
  | 'not_envelope'
  | 'unexpected_shape'
  | 'unusable_class_id'
  | 'body_status_missing'
  /** The remote answered with this HTTP status, or this `status` in a 2xx body. */
  | `http_${number}`
  | `body_status_${number}`;

export interface ClassroomErrorDetails {
  operation: ClassroomOperation;
  /** Defaults to what the statuses say (`http_<status>`, `body_status_<status>`); required when neither is known. */
  reason?: FailureReason | undefined;
  httpStatus?: number | undefined;
  bodyStatus?: number | undefined;
  retryAfterMs?: number | undefined;
  /** The `message` of the remote's answer, as it said it (the service has no error codes). */
  remoteMessage?: string | undefined;
  cause?: unknown;
}

/** Base class. Messages never contain credentials or join links: they are safe to log and store. */
export abstract class ClassroomError extends Error {
  abstract readonly kind: FailureKind;
  readonly reason: FailureReason;
  readonly operation: ClassroomOperation;
  readonly httpStatus: number | undefined;
  readonly bodyStatus: number | undefined;
  readonly remoteMessage: string | undefined;
  /**
   * From `Retry-After` when the remote sent one, on any failed answer (a 429, a 503): how long it
   * asked us to wait. The live service is not known to send it.
   */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, details: ClassroomErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.operation = details.operation;
    this.reason = details.reason ?? reasonOfStatuses(details);
    this.httpStatus = details.httpStatus;
    this.bodyStatus = details.bodyStatus;
    this.remoteMessage = details.remoteMessage;
    this.retryAfterMs = details.retryAfterMs;
  }

  /** What a log line or the mapping table may hold about this error. */
  toSafeJSON(): Record<string, unknown> {
    return {
      kind: this.kind,
      reason: this.reason,
      operation: this.operation,
      httpStatus: this.httpStatus,
      bodyStatus: this.bodyStatus,
      message: this.message,
    };
  }
}

export class NotSentError extends ClassroomError {
  override readonly name = 'NotSentError';
  readonly kind = 'not_sent';
}

export class RejectedError extends ClassroomError {
  override readonly name = 'RejectedError';
  readonly kind = 'rejected';
}

export class ThrottledError extends ClassroomError {
  override readonly name = 'ThrottledError';
  readonly kind = 'throttled';
}

export class OutcomeUnknownError extends ClassroomError {
  override readonly name = 'OutcomeUnknownError';
  readonly kind = 'outcome_unknown';
}

export class CredentialsRefusedError extends ClassroomError {
  override readonly name = 'CredentialsRefusedError';
  readonly kind = 'credentials_refused';
  /** False when the breaker stopped the request before it left (the key is known to be refused). */
  readonly sent: boolean;
  constructor(message: string, details: ClassroomErrorDetails & { sent: boolean }) {
    super(message, details);
    this.sent = details.sent;
  }
}

function reasonOfStatuses(details: ClassroomErrorDetails): FailureReason {
  if (details.bodyStatus !== undefined) return `body_status_${details.bodyStatus}`;
  if (details.httpStatus !== undefined) return `http_${details.httpStatus}`;
  // Every error raised without a status names its reason; this is only a guard for a new caller.
  return 'connection_lost';
}

export function isClassroomError(value: unknown): value is ClassroomError {
  return value instanceof ClassroomError;
}

/**
 * The Retry-After of the remote's answer behind `error`, if it sent one: the sync layer wraps the
 * remote's error (a SyncError, a RunStoppedError, the queue's), so it is looked for down the
 * `cause` chain, at most a few links deep.
 */
export function retryAfterOf(error: unknown): number | undefined {
  let current = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (isClassroomError(current)) return current.retryAfterMs;
    current = current.cause;
  }
  return undefined;
}

/** Maps an HTTP status (or a body `status`) to the kind of failure it means. */
export function kindForStatus(status: number): FailureKind {
  if (status === 429) return 'throttled';
  if (status === 401) return 'credentials_refused';
  if (status === 408 || status >= 500) return 'outcome_unknown';
  if (status >= 400) return 'rejected';
  // 1xx/3xx or a nonsense body status on a 2xx response: we cannot tell what happened.
  return 'outcome_unknown';
}

export function errorForKind(kind: FailureKind, message: string, details: ClassroomErrorDetails): ClassroomError {
  switch (kind) {
    case 'not_sent':
      return new NotSentError(message, details);
    case 'rejected':
      return new RejectedError(message, details);
    case 'throttled':
      return new ThrottledError(message, details);
    case 'outcome_unknown':
      return new OutcomeUnknownError(message, details);
    case 'credentials_refused':
      return new CredentialsRefusedError(message, { ...details, sent: true });
  }
}

/** The remote answered 404: for a class or an institute, "not known (yet)". */
export function isNotFound(error: unknown): error is ClassroomError {
  return isClassroomError(error) && error.kind === 'rejected' && (error.httpStatus === 404 || error.bodyStatus === 404);
}

/** The remote answered 403: about the key, or about one institute or class; only a probe can tell. */
export function isForbidden(error: unknown): error is ClassroomError {
  return isClassroomError(error) && error.kind === 'rejected' && (error.httpStatus === 403 || error.bodyStatus === 403);
}
