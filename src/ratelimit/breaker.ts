// The credentials breaker: one per API key, shared by every process through Redis. When the remote
// refuses the key itself (401, or a 403 a probe confirms), no batch is at fault: every worker stops
// calling the remote, one process at a time probes with a harmless read, and the first probe that
// succeeds closes the breaker for the whole fleet. Batches wait meanwhile; none changes state or
// uses an attempt. The rate limiter refuses to grant a slot while the key below exists, so checking
// the breaker costs no extra round trip per call.
import type { Redis } from '../redis/connection.ts';

export interface BreakerState {
  /** When the breaker opened (the first refusal seen). */
  since: Date;
  /** HTTP status of the refusal that opened it (or of the last failed probe). */
  status: number | undefined;
  /** What the remote said; never a credential. */
  reason: string;
  lastProbeAt: Date | undefined;
  /** The last probe's outcome, e.g. "HTTP 401: invalid credentials". */
  lastProbe: string | undefined;
}

export interface CredentialsBreaker {
  /** The Redis key whose existence means "open" (the rate limiter checks it). */
  readonly key: string;
  /** Opens the breaker fleet-wide. Resolves true only for the one call that opened it. */
  open(refusal: { status: number | undefined; reason: string }): Promise<boolean>;
  /** Undefined while closed. */
  state(): Promise<BreakerState | undefined>;
  /** Closes it. Resolves true only for the one call that closed it. */
  close(): Promise<boolean>;
  /** Claims the next probe for this process; at most one process wins per `everyMs`. */
  claimProbe(everyMs: number): Promise<boolean>;
  /** Notes a probe that found the key still refused (or could not tell). */
  recordProbe(outcome: { status: number | undefined; message: string }): Promise<void>;
}

interface Stored {
  since: number;
  status: number | null;
  reason: string;
  lastProbeAt: number | null;
  lastProbe: string | null;
}

export function createCredentialsBreaker(redis: Redis, key: string): CredentialsBreaker {
  const read = async (): Promise<Stored | undefined> => {
    const raw = await redis.get(key);
    if (!raw) return undefined;
    try {
      return JSON.parse(raw) as Stored;
    } catch {
      // Unreadable means someone else wrote it; still "open": better to probe than to hammer.
      return { since: Date.now(), status: null, reason: 'breaker state unreadable', lastProbeAt: null, lastProbe: null };
    }
  };
  return {
    key,
    async open({ status, reason }) {
      const stored: Stored = { since: Date.now(), status: status ?? null, reason: reason.slice(0, 500), lastProbeAt: null, lastProbe: null };
      return (await redis.set(key, JSON.stringify(stored), 'NX')) === 'OK';
    },
    async state() {
      const stored = await read();
      if (!stored) return undefined;
      return {
        since: new Date(stored.since),
        status: stored.status ?? undefined,
        reason: stored.reason,
        lastProbeAt: stored.lastProbeAt === null ? undefined : new Date(stored.lastProbeAt),
        lastProbe: stored.lastProbe ?? undefined,
      };
    },
    async close() {
      return (await redis.del(key)) === 1;
    },
    async claimProbe(everyMs) {
      return (await redis.set(`${key}:probe`, '1', 'PX', Math.max(1, Math.round(everyMs)), 'NX')) === 'OK';
    },
    async recordProbe({ status, message }) {
      const stored = await read();
      if (!stored) return;
      const next: Stored = { ...stored, lastProbeAt: Date.now(), lastProbe: message.slice(0, 500), status: status ?? stored.status };
      // XX: never re-open a breaker another process closed in the meantime.
      await redis.set(key, JSON.stringify(next), 'XX');
    },
  };
}

/** "credentials refused since 2026-11-23T10:00:00.000Z (HTTP 401: ...)": for status, check, /readyz. */
export function describeBreaker(state: BreakerState): string {
  const status = state.status === undefined ? '' : `HTTP ${state.status}: `;
  return `credentials refused since ${state.since.toISOString()} (${status}${state.reason})`;
}
