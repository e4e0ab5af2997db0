// Every failure of a remote call is classified once, here, into what the sync state machine
// needs to know: may the request have taken effect, and may it be sent again?

export type ClassroomOperation = 'addClass' | 'editClass' | 'getClass' | 'listClasses';

export type FailureKind =
  /** The request never reached the remote (connection refused, DNS, rate limit not acquired): safe to retry. */
  | 'not_sent'
  /** The remote refused it for good (4xx: credentials, headers, bad input, unknown class): retrying will not help. */
  | 'rejected'
  /** The remote said "too many requests": nothing was done; wait, then retry without counting an attempt. */
  | 'throttled'
  /** The request may have taken effect (timeout, reset after sending, 5xx, unreadable 2xx body). */
  | 'outcome_unknown';

export interface ClassroomErrorDetails {
  operation: ClassroomOperation;
  httpStatus?: number | undefined;
  bodyStatus?: number | undefined;
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

/** Base class. Messages never contain credentials or join links: they are safe to log and store. */
export abstract class ClassroomError extends Error {
  abstract readonly kind: FailureKind;
  readonly operation: ClassroomOperation;
  readonly httpStatus: number | undefined;
  readonly bodyStatus: number | undefined;

  constructor(message: string, details: ClassroomErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.operation = details.operation;
    this.httpStatus = details.httpStatus;
    this.bodyStatus = details.bodyStatus;
  }

  /** What a log line or the mapping table may hold about this error. */
  toSafeJSON(): Record<string, unknown> {
    return {
      kind: this.kind,
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
  /** From `Retry-After` when the remote sent one; the live service is not known to. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, details: ClassroomErrorDetails) {
    super(message, details);
    this.retryAfterMs = details.retryAfterMs;
  }
}

export class OutcomeUnknownError extends ClassroomError {
  override readonly name = 'OutcomeUnknownError';
  readonly kind = 'outcome_unknown';
}

export function isClassroomError(value: unknown): value is ClassroomError {
  return value instanceof ClassroomError;
}

/** Maps an HTTP status (or a body `status`) to the kind of failure it means. */
export function kindForStatus(status: number): FailureKind {
  if (status === 429) return 'throttled';
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
  }
}
