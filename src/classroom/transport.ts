// Errors below HTTP: did the request leave this process, and could the remote have acted on it?
import { type ClassroomOperation, NotSentError, OutcomeUnknownError, type ClassroomError } from './errors.ts';
import { type Clock, systemClock } from '../support/clock.ts';

/** Failures that happen before a single byte of the request reaches the remote. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'ERR_INVALID_URL']);

export function transportError(operation: ClassroomOperation, error: unknown, timeoutMs: number, httpStatus?: number): ClassroomError {
  const name = (error as { name?: string })?.name;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new OutcomeUnknownError(`${operation} timed out after ${timeoutMs} ms; the remote may still have acted on it`, {
      operation,
      httpStatus,
      reason: 'timeout',
      cause: error,
    });
  }
  const code = errorCode(error);
  if (code && NOT_SENT_CODES.has(code)) {
    return new NotSentError(`${operation} not sent: cannot connect (${code})`, { operation, reason: 'connect_failed', cause: error });
  }
  return new OutcomeUnknownError(
    `${operation} lost its connection (${code ?? (error as Error)?.message ?? 'unknown error'}); the remote may have acted on it`,
    { operation, httpStatus, reason: 'connection_lost', cause: error },
  );
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** `Retry-After` as seconds or an HTTP date (ms from now by `clock`, epoch ms); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, clock: Pick<Clock, 'now'> = systemClock): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - clock.now());
}
