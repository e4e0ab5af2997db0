// Which database errors mean "the connection went away" rather than "the statement was wrong": the
// first are worth trying again on a new connection, the second never are.
import { DrizzleQueryError } from 'drizzle-orm/errors';

/** Codes Node raises when PostgreSQL cannot be reached or the socket dies. */
export const CONNECTION_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/** SQLSTATEs of a session the server ended: admin_shutdown, crash_shutdown, cannot_connect_now. */
const ENDED_SESSION = new Set(['57P01', '57P02', '57P03']);

/** What node-postgres says about a socket that closed under a client (it sets no code). */
const LOST_MESSAGES = [/connection terminated/i, /not queryable/i, /timeout exceeded when trying to connect/i];

export function isConnectionLoss(error: unknown): boolean {
  const cause: unknown = error instanceof DrizzleQueryError ? error.cause : error;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || ENDED_SESSION.has(code) || code.startsWith('08'))) return true;
  const message = cause instanceof Error ? cause.message : '';
  return LOST_MESSAGES.some((pattern) => pattern.test(message));
}
