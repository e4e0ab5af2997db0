// The failed-sign-in throttle on a clock the test gives it: against real Redis (the count the fleet
// shares), and in memory while Redis is unreachable. The window's length is checked to the second
// by moving that clock, never by waiting a minute or reading the time.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuthThrottle, FAILURE_WINDOW_SECONDS, MAX_FAILURES, createAuthThrottle } from '../../src/http/auth-throttle.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { REDIS_URL } from '../helpers/harness.ts';

const redis = createRedis(REDIS_URL, 'worker');
// Never connected (lazy, and nothing listens there): a Redis that is unreachable.
const unreachable = createRedis('redis://127.0.0.1:1', 'probe');
// Until the connection is ready the throttle counts in memory: wait for it.
beforeAll(async () => {
  await redis.ping();
});
afterAll(async () => {
  await redis.quit();
  unreachable.disconnect();
});

const WINDOW_MS = FAILURE_WINDOW_SECONDS * 1000;

/** A clock at a fixed epoch time, moved by the test. */
function testClock() {
  let t = Date.parse('2026-11-25T10:00:00Z');
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

async function fail(throttle: AuthThrottle, address: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) await throttle.failed(address);
}

describe.each([
  ['in Redis', () => redis],
  ['in memory while Redis is unreachable', () => unreachable],
])('the sign-in throttle, %s', (_where, connection) => {
  const prefix = () => `cs-test-throttle-${randomBytes(4).toString('hex')}`;

  it(`lets an address try ${MAX_FAILURES} times, then refuses it until the window that opened at its first failure ends`, async () => {
    const clock = testClock();
    const throttle = createAuthThrottle(connection(), prefix(), clock);
    await fail(throttle, '10.0.0.1', MAX_FAILURES - 1);
    expect(await throttle.retryAfter('10.0.0.1')).toBeUndefined();
    clock.advance(10_000);
    await throttle.failed('10.0.0.1');
    expect(await throttle.retryAfter('10.0.0.1')).toBe(FAILURE_WINDOW_SECONDS - 10);
    // Retry-After rounds up: never "0" while refused.
    clock.advance(WINDOW_MS - 10_000 - 1_500);
    expect(await throttle.retryAfter('10.0.0.1')).toBe(2);
    clock.advance(1_499);
    expect(await throttle.retryAfter('10.0.0.1')).toBe(1);
    clock.advance(1);
    expect(await throttle.retryAfter('10.0.0.1')).toBeUndefined();
    // A new window opens with the next failure: one failure is far from the limit.
    await throttle.failed('10.0.0.1');
    expect(await throttle.retryAfter('10.0.0.1')).toBeUndefined();
  });

  it('counts each address alone, and forgets failures whose window has ended', async () => {
    const clock = testClock();
    const throttle = createAuthThrottle(connection(), prefix(), clock);
    await fail(throttle, '10.0.0.2', MAX_FAILURES);
    expect(await throttle.retryAfter('10.0.0.2')).toBe(FAILURE_WINDOW_SECONDS);
    expect(await throttle.retryAfter('10.0.0.3')).toBeUndefined();
    await fail(throttle, '10.0.0.3', MAX_FAILURES - 1);
    clock.advance(WINDOW_MS);
    await throttle.failed('10.0.0.3');
    expect(await throttle.retryAfter('10.0.0.3')).toBeUndefined();
  });
});

describe('the sign-in throttle of a fleet', () => {
  it('counts an address once for every process that shares the Redis, and all of them refuse it until the same second', async () => {
    const clock = testClock();
    const prefix = `cs-test-throttle-${randomBytes(4).toString('hex')}`;
    const [one, two] = [createAuthThrottle(redis, prefix, clock), createAuthThrottle(redis, prefix, clock)];
    await fail(one, '10.0.0.4', MAX_FAILURES / 2);
    clock.advance(5_000);
    await fail(two, '10.0.0.4', MAX_FAILURES / 2);
    expect(await one.retryAfter('10.0.0.4')).toBe(FAILURE_WINDOW_SECONDS - 5);
    expect(await two.retryAfter('10.0.0.4')).toBe(FAILURE_WINDOW_SECONDS - 5);
    // A process that counted nothing itself refuses the address too; Redis drops the count with the window.
    expect(await createAuthThrottle(redis, prefix, clock).retryAfter('10.0.0.4')).toBe(FAILURE_WINDOW_SECONDS - 5);
    expect(await redis.pttl(`${prefix}:sign-in-failures:10.0.0.4`)).toBeGreaterThan(0);
  });
});
