// Failed sign-ins per source address: after MAX_FAILURES in a window, every authenticated route
// answers that address 429 until the window passes. Successes never count, so a client with a good
// token is never slowed by its own traffic, and a guesser gets 20 tries a minute, not thousands.
// A failure is counted and judged in one step (one script in Redis, one synchronous update in
// memory): guesses sent all at once each learn whether they were one too many, so no more than
// MAX_FAILURES of them are ever answered "wrong token" rather than 429. An IPv6 address counts as
// its /64, which one host commonly holds whole; an IPv4-mapped one as its IPv4 address.
//
// Counted in Redis, so a fleet of workers behind one load balancer shares one count per address; if
// Redis is unreachable each process counts in memory instead, which keeps the throttle without
// making sign-in depend on Redis. A window opens at an address's first failure and ends
// FAILURE_WINDOW_SECONDS later by the clock the throttle is given: the system clock, whose end of
// the window is stored with the count, so every process of the fleet reads the same end.
import type { Result } from 'ioredis';
import ipaddr from 'ipaddr.js';
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
    classroomSyncSignInFailure(key: string, now: number, windowMs: number): Result<[number, number], Context>;
  }
}

// KEYS[1] = the address's count (a hash: n, ends). ARGV: now (ms, the caller's clock), the window (ms).
// A window that has ended opens again at this failure; Redis drops the key once it has ended.
// Returns the failures counted in the window with this one, and when the window ends.
const COUNT_FAILURE = `
local now = tonumber(ARGV[1])
local ends = tonumber(redis.call('HGET', KEYS[1], 'ends') or '0')
local n = 1
if ends <= now then
  ends = now + tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'n', 1, 'ends', ends)
else
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
end
redis.call('PEXPIRE', KEYS[1], math.max(1, ends - now))
return {n, ends}
`;

export interface AuthThrottle {
  /** Seconds until this address may try again, or undefined if it may now. */
  retryAfter(address: string): Promise<number | undefined>;
  /**
   * Counts one failed authentication from this address. Resolves with the seconds until it may try
   * again when this failure was past the limit (answer 429), or undefined (answer 401).
   */
  failed(address: string): Promise<number | undefined>;
}

/** An address's window: failures counted in it, and when it ends (ms, by the throttle's clock). */
interface Window {
  failures: number;
  endsAt: number;
}

export function createAuthThrottle(redis: Redis, prefix: string, clock: Pick<Clock, 'now'> = systemClock): AuthThrottle {
  if (!Reflect.has(redis, 'classroomSyncSignInFailure')) redis.defineCommand('classroomSyncSignInFailure', { numberOfKeys: 1, lua: COUNT_FAILURE });
  const keyOf = (counted: string) => `${prefix}:sign-in-failures:${counted}`;
  const memory = memoryWindows();
  // While Redis is not ready a command would wait in its offline queue: count in memory at once.
  const shared = <T>(read: () => Promise<T>): Promise<T | undefined> => (redis.status === 'ready' ? read().catch(() => undefined) : Promise.resolve(undefined));
  return {
    async retryAfter(address) {
      const counted = countedAs(address);
      const stored = await shared(() => redis.hmget(keyOf(counted), 'n', 'ends'));
      const window = stored === undefined ? memory.get(counted) : windowOf(stored);
      return window && window.failures >= MAX_FAILURES ? secondsLeft(window, clock.now()) : undefined;
    },
    async failed(address) {
      const counted = countedAs(address);
      const now = clock.now();
      const stored = await shared(() => redis.classroomSyncSignInFailure(keyOf(counted), now, WINDOW_MS));
      const window = stored === undefined ? memory.count(counted, now) : { failures: Number(stored[0]), endsAt: Number(stored[1]) };
      return window.failures > MAX_FAILURES ? secondsLeft(window, now) : undefined;
    },
  };
}

/** Seconds left of a window (rounded up: never "0" while refused); undefined once it has ended. */
function secondsLeft(window: Window, now: number): number | undefined {
  return window.endsAt <= now ? undefined : Math.max(1, Math.ceil((window.endsAt - now) / 1000));
}

/**
 * Whom a failure from `address` is counted against: an IPv4 address as it is (an IPv4-mapped IPv6
 * address too: `::ffff:192.0.2.1` is 192.0.2.1), an IPv6 address as its /64 (`2001:db8:1:2::/64`),
 * since a host is commonly given a whole /64 and could otherwise guess from each of its addresses.
 */
export function countedAs(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const ip = ipaddr.process(address);
  if (!(ip instanceof ipaddr.IPv6)) return ip.toString();
  const network = new ipaddr.IPv6([...ip.parts.slice(0, 4), 0, 0, 0, 0]);
  return `${network.toRFC5952String()}/64`;
}

function windowOf([failures, endsAt]: (string | null)[]): Window | undefined {
  return failures && endsAt ? { failures: Number(failures), endsAt: Number(endsAt) } : undefined;
}

/** The same count in this process alone. */
function memoryWindows() {
  const windows = new Map<string, Window>();
  return {
    get: (counted: string) => windows.get(counted),
    /** Counts a failure and returns its window: synchronous, so two failures never read one count. */
    count(counted: string, now: number): Window {
      const open = windows.get(counted);
      const window = open && open.endsAt > now ? open : { failures: 0, endsAt: now + WINDOW_MS };
      window.failures += 1;
      windows.set(counted, window);
      if (windows.size > MEMORY_KEEP) for (const [key, w] of windows) if (w.endsAt <= now) windows.delete(key);
      return window;
    },
  };
}
