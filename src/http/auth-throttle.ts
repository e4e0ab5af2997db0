// Failed sign-ins per source address: after MAX_FAILURES in a window, every authenticated route
// answers that address 429 until the window passes. Successes never count, so a client with a good
// token is never slowed by its own traffic, and a guesser gets 20 tries a minute, not thousands.
//
// Counted in Redis, so a fleet of workers behind one load balancer shares one count per address; if
// Redis is unreachable each process counts in memory instead, which keeps the throttle without
// making sign-in depend on Redis. A window opens at an address's first failure and ends
// FAILURE_WINDOW_SECONDS later by the clock the throttle is given: the system clock, whose end of
// the window is stored with the count, so every process of the fleet reads the same end.
import type { Result } from 'ioredis';
import type { Redis } from '../redis/connection.ts';
import { type Clock, systemClock } from '../support/clock.ts';

export const MAX_FAILURES = 20;
export const FAILURE_WINDOW_SECONDS = 60;
const WINDOW_MS = FAILURE_WINDOW_SECONDS * 1000;
/** Addresses counted in memory at most (while Redis is unreachable): past it, ended windows are dropped. */
const MEMORY_KEEP = 10_000;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** The COUNT_FAILURE script below, defined on the connection by createAuthThrottle. */
    classroomSyncSignInFailure(key: string, now: number, windowMs: number): Result<number, Context>;
  }
}

// KEYS[1] = the address's count (a hash: n, ends). ARGV: now (ms, the caller's clock), the window (ms).
// A window that has ended opens again at this failure; Redis drops the key once it has ended.
const COUNT_FAILURE = `
local now = tonumber(ARGV[1])
local ends = tonumber(redis.call('HGET', KEYS[1], 'ends') or '0')
if ends <= now then
  ends = now + tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'n', 1, 'ends', ends)
else
  redis.call('HINCRBY', KEYS[1], 'n', 1)
end
redis.call('PEXPIRE', KEYS[1], math.max(1, ends - now))
return 1
`;

export interface AuthThrottle {
  /** Seconds until this address may try again, or undefined if it may now. */
  retryAfter(address: string): Promise<number | undefined>;
  /** Counts one failed authentication from this address. */
  failed(address: string): Promise<void>;
}

/** An address's window: failures counted in it, and when it ends (ms, by the throttle's clock). */
interface Window {
  failures: number;
  endsAt: number;
}

export function createAuthThrottle(redis: Redis, prefix: string, clock: Pick<Clock, 'now'> = systemClock): AuthThrottle {
  if (!Reflect.has(redis, 'classroomSyncSignInFailure')) redis.defineCommand('classroomSyncSignInFailure', { numberOfKeys: 1, lua: COUNT_FAILURE });
  const keyOf = (address: string) => `${prefix}:sign-in-failures:${address}`;
  const memory = memoryWindows(clock);
  // While Redis is not ready a command would wait in its offline queue: count in memory at once.
  const shared = <T>(read: () => Promise<T>): Promise<T | undefined> => (redis.status === 'ready' ? read().catch(() => undefined) : Promise.resolve(undefined));
  return {
    async retryAfter(address) {
      const stored = await shared(() => redis.hmget(keyOf(address), 'n', 'ends'));
      const window = stored === undefined ? memory.get(address) : windowOf(stored);
      return window ? secondsLeft(window, clock.now()) : undefined;
    },
    async failed(address) {
      const counted = await shared(() => redis.classroomSyncSignInFailure(keyOf(address), clock.now(), WINDOW_MS));
      if (counted === undefined) memory.count(address);
    },
  };
}

/** Seconds left of a window that is full; undefined when the address may try again. */
function secondsLeft(window: Window, now: number): number | undefined {
  if (window.failures < MAX_FAILURES || window.endsAt <= now) return undefined;
  return Math.max(1, Math.ceil((window.endsAt - now) / 1000));
}

function windowOf([failures, endsAt]: (string | null)[]): Window | undefined {
  return failures && endsAt ? { failures: Number(failures), endsAt: Number(endsAt) } : undefined;
}

/** The same count in this process alone. */
function memoryWindows(clock: Pick<Clock, 'now'>) {
  const windows = new Map<string, Window>();
  return {
    get: (address: string) => windows.get(address),
    count(address: string) {
      const now = clock.now();
      const window = windows.get(address);
      if (window && window.endsAt > now) window.failures += 1;
      else windows.set(address, { failures: 1, endsAt: now + WINDOW_MS });
      if (windows.size > MEMORY_KEEP) for (const [key, w] of windows) if (w.endsAt <= now) windows.delete(key);
    },
  };
}
