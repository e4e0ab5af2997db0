// What the dashboard's session cookies are signed with: a secret of the server's own, never anything
// the clients file holds (a file of token digests must not be enough to sign an admin's session).
//
// DASHBOARD_SESSION_SECRET when set. Unset, the fleet shares one secret it generates itself: the
// first worker to start stores 32 random bytes under `<QUEUE_PREFIX>:dashboard-session-secret` (SET
// NX, no expiry) and every worker reads that one, so a browser behind a load balancer stays signed in
// whichever worker answers. Each worker reads it once, at start. A new DASHBOARD_SESSION_SECRET, or
// the key deleted, and the workers restarted, ends every session.
import { randomBytes } from 'node:crypto';
import type { Redis } from '../redis/connection.ts';
import { within } from '../support/timeout.ts';

/** How long a request waits for a secret still being read from Redis before going on without it. */
const WAIT_MS = 1_000;

/** The secret, or undefined while Redis has not given it (no session is issued or accepted then). */
export type SessionSecret = () => Promise<Buffer | undefined>;

export interface SessionSecretDeps {
  /** DASHBOARD_SESSION_SECRET. */
  configured: string | undefined;
  redis: Redis;
  prefix: string;
}

export function sessionSecretKey(prefix: string): string {
  return `${prefix}:dashboard-session-secret`;
}

/** Starts reading the fleet's secret at once (unless one is configured); each call waits for it briefly. */
export function sessionSecret({ configured, redis, prefix }: SessionSecretDeps): SessionSecret {
  if (configured !== undefined) {
    const key = Buffer.from(configured, 'utf8');
    return async () => key;
  }
  let reading: Promise<Buffer> | undefined;
  // A failed read (Redis closed under it, the key deleted in between) is tried again by the next request.
  const read = () =>
    (reading ??= fleetSecret(redis, sessionSecretKey(prefix)).catch((error: unknown) => {
      reading = undefined;
      throw error;
    }));
  read().catch(() => undefined);
  return async () => {
    const got = await within(read(), WAIT_MS).catch(() => undefined);
    return got?.done ? got.value : undefined;
  };
}

/** The fleet's secret: stored by whichever worker asks first, read by all. */
async function fleetSecret(redis: Redis, key: string): Promise<Buffer> {
  await redis.set(key, randomBytes(32).toString('base64url'), 'NX');
  const stored = await redis.get(key);
  if (!stored) throw new Error(`${key} vanished right after it was set`);
  return Buffer.from(stored, 'utf8');
}
