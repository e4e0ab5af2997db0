// How the lanes share one budget (src/ratelimit/limiter.ts), against real Redis: a live call may
// reserve a slot far ahead, a backfill call only the next one, operator work two; a refused lower
// lane is told when to ask again, and callers of one lane are spread one slot apart. Slots are
// Redis's time; how long a caller sleeps until one, and how late it wakes, is a clock's it is given.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { LaneDeferredError, type RateLimiterOptions, createRateLimiter } from '../../src/ratelimit/limiter.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { type Clock, monotonicClock } from '../../src/support/clock.ts';
import { manualClock } from '../helpers/clock.ts';
import { REDIS_URL, waitFor } from '../helpers/harness.ts';

const redis = createRedis(REDIS_URL, 'worker');
afterAll(async () => {
  await redis.quit();
});

// 60 calls a minute at 98%: one slot every ~1,020 ms. What a caller is told is a slot's time less
// the time since it was reserved, so each check allows SLACK of Redis round trips and scheduling
// between calls (at 600 a minute, ~100 ms slots left a loaded machine too little room).
const fresh = (options: Partial<RateLimiterOptions> = {}) =>
  createRateLimiter({ redis, key: `cs-test-lanes-${randomBytes(4).toString('hex')}`, callsPerMinute: 60, ...options });

/**
 * The real clock, except that its first sleep wakes `lateBy` ms late by its own reading: a process
 * stalled that long (frozen, or its event loop held) past a slot it was sleeping until.
 */
function wakesLateOnce(lateBy: number): Clock {
  let skew = 0;
  let stalled = false;
  return {
    now: () => monotonicClock.now() + skew,
    async sleep(ms) {
      await monotonicClock.sleep(ms);
      if (!stalled) skew += lateBy;
      stalled = true;
    },
    after: monotonicClock.after,
  };
}
const INTERVAL = 60_000 / (60 * 0.98);
const SLACK = 250;

describe('rate-limit lanes', () => {
  it('backfill takes only the next slots; live queues behind at most those', async () => {
    const limiter = fresh();
    const first = await limiter.reserve('backfill');
    const second = await limiter.reserve('backfill');
    const third = await limiter.reserve('backfill');
    expect(first).toEqual({ granted: true, waitMs: 0 });
    // The next slot is one interval away: still within a backfill caller's reach.
    expect(second.granted && second.waitMs).toBeGreaterThan(INTERVAL - SLACK);
    expect(third.granted).toBe(false);
    const live = await limiter.reserve('live');
    expect(live.granted).toBe(true);
    // Behind the two promised to backfill, and nothing else.
    expect(live.granted && live.waitMs).toBeLessThanOrEqual(2 * INTERVAL + 5);
  });

  it('grants backfill the next slot even when it asks within the same millisecond as the slot before', async () => {
    // The schedule's fractional ms next to a 13-digit clock: without a tolerance, most such asks
    // came out a hair past the one-slot horizon and were refused.
    let refused = 0;
    for (let i = 0; i < 100; i += 1) {
      const limiter = fresh();
      await limiter.reserve('backfill');
      if (!(await limiter.reserve('backfill')).granted) refused += 1;
    }
    expect(refused).toBe(0);
  });

  it('refused callers of a lane are told to come back one slot apart, and operator work reaches further than backfill', async () => {
    const limiter = fresh();
    for (let i = 0; i < 4; i += 1) await limiter.reserve('live');
    const asks = [await limiter.reserve('backfill'), await limiter.reserve('backfill'), await limiter.reserve('backfill')];
    const retries = asks.map((a) => (a.granted ? -1 : a.retryInMs));
    expect(retries.every((r) => r > 0)).toBe(true);
    expect(retries[1]! - retries[0]!).toBeGreaterThan(INTERVAL - SLACK);
    expect(retries[2]! - retries[1]!).toBeGreaterThan(INTERVAL - SLACK);
    // Four live slots ahead: too far for operator work too, but it may come back sooner than backfill.
    const operator = await limiter.reserve('operator');
    expect(operator.granted).toBe(false);
    expect(!operator.granted && operator.retryInMs).toBeLessThan(retries[0]!);
  });

  it('acquire() of a lower lane throws LaneDeferredError instead of waiting; a live acquire waits until its slot', async () => {
    const clock = manualClock();
    const limiter = fresh({ clock });
    for (let i = 0; i < 3; i += 1) await limiter.reserve('live');
    await expect(limiter.acquire('backfill')).rejects.toBeInstanceOf(LaneDeferredError);
    expect(clock.pending()).toBe(0);
    let acquired = false;
    const live = limiter.acquire('live').finally(() => {
      acquired = true;
    });
    await waitFor(() => clock.pending() === 1, 'the live caller to sleep until its slot');
    // Behind the three slots taken, less the time the asks took.
    const [wait = 0] = clock.dueIn();
    expect(wait).toBeGreaterThan(2 * INTERVAL);
    await clock.advance(wait - 1);
    expect(acquired).toBe(false);
    await clock.advance(1);
    expect(await live).toMatchObject({ waitedMs: wait });
  });

  it('a caller that oversleeps its slot takes a fresh one, reported as a retake', async () => {
    // 120 a minute, a slot every 510 ms: the second call waits for its slot even if the first
    // call's round trip to Redis was slow (at 600 a minute, one over 100 ms on a loaded machine
    // left no wait at all, and nothing to oversleep).
    const interval = 60_000 / (120 * 0.98);
    const granted: [string, boolean][] = [];
    // It wakes two slots past the slot it slept until, as a stalled process does.
    const clock = wakesLateOnce(2 * interval);
    const key = `cs-test-lanes-${randomBytes(4).toString('hex')}`;
    const limiter = createRateLimiter({ redis, key, callsPerMinute: 120, clock, onReserve: (lane, retake) => granted.push([lane, retake]) });
    await limiter.acquire('live');
    await limiter.acquire('live');
    expect(granted).toEqual([
      ['live', false],
      ['live', false],
      ['live', true],
    ]);
  });

  it('at under 50 calls a minute, a call later than the headroom of a minute takes a fresh slot, even within one slot', async () => {
    // 40 a minute: a slot every 1.53 s, longer than the 1.2 s a remote counting per minute leaves us.
    const interval = 60_000 / (40 * 0.98);
    const granted: boolean[] = [];
    // It wakes 1.4 s past its slot: within one slot, past the headroom.
    const clock = wakesLateOnce(1_400);
    const key = `cs-test-lanes-${randomBytes(4).toString('hex')}`;
    const limiter = createRateLimiter({ redis, key, callsPerMinute: 40, clock, onReserve: (_lane, retake) => granted.push(retake) });
    await limiter.acquire('live');
    await limiter.acquire('live');
    expect(1_400).toBeLessThan(interval);
    expect(granted).toEqual([false, false, true]);
  }, 20_000);
});
