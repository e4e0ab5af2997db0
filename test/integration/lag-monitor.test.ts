// The account's read lag as the fleet knows it (src/sync/lag-monitor.ts): settle evidence in a
// window that forgets, and a read schedule every process shares, moved by outcomes only.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../src/redis/connection.ts';
import { LAG_WINDOW_MS, READ_EARLY_SHARE, createLagMonitor } from '../../src/sync/lag-monitor.ts';
import { REDIS_URL } from '../helpers/harness.ts';

const redis = createRedis(REDIS_URL, 'worker');
const other = createRedis(REDIS_URL, 'worker');
// The monitor asks nothing of a connection that is not ready yet (it reads as "nothing known").
beforeAll(async () => {
  await Promise.all([redis.ping(), other.ping()]);
});
afterAll(async () => {
  await redis.quit();
  await other.quit();
});
const key = () => `test-lag:${randomBytes(6).toString('hex')}:lag`;
/** Epoch ms on a bucket boundary, so the window's edges fall where the test says. */
const T0 = 1_800_000_000_000;

describe('settle evidence', () => {
  it('reports the largest lag of its window and forgets samples older than it', async () => {
    let now = T0;
    const monitor = createLagMonitor({ redis, key: key(), maxDelayMs: 300_000, now: () => now });
    await monitor.record(900, 'read');
    now = T0 + 10_000;
    await monitor.record(100, 'read');
    await monitor.record(5_000, 'listing_fresh');
    await monitor.record(50, 'listing_fresh');
    await monitor.record(300, 'listing');
    // A listing's freshness is no lag sample: its smallest says how fresh a listing was seen.
    expect(await monitor.estimate()).toEqual({ maxMs: 900, samples: 2, listingFreshMs: 50 });
    now = T0 + LAG_WINDOW_MS + 5_000;
    expect(await monitor.estimate()).toEqual({ maxMs: 300, samples: 1, listingFreshMs: 50 });
    now = T0 + 2 * LAG_WINDOW_MS;
    expect(await monitor.estimate()).toEqual({ maxMs: 0, samples: 0, listingFreshMs: undefined });
  });

  it('is one for every process of the account: another connection sees what one recorded', async () => {
    const shared = key();
    const one = createLagMonitor({ redis, key: shared, maxDelayMs: 300_000 });
    const two = createLagMonitor({ redis: other, key: shared, maxDelayMs: 300_000 });
    for (let i = 0; i < 5; i += 1) await one.readOutcome('class', 1_000 + i, true, true);
    await one.readOutcome('class', 4_000, false, true);
    expect(await two.estimate()).toEqual({ maxMs: 4_000, samples: 6, listingFreshMs: undefined });
    expect(await two.readDelay('class')).toBe(await one.readDelay('class'));
    expect(await two.readDelay('link')).toBe(0);
  });

  it('ages out as a whole once nothing was written for the window', async () => {
    const shared = key();
    const monitor = createLagMonitor({ redis, key: shared, maxDelayMs: 300_000 });
    await monitor.readOutcome('link', 2_000, false, false);
    const ttl = await redis.pttl(shared);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(LAG_WINDOW_MS);
  });
});

describe('read schedule', () => {
  /** Reads of a remote whose every write shows `lagMs` after it, each sent when the schedule says. */
  async function simulate(monitor: ReturnType<typeof createLagMonitor>, lagMs: number, reads: number) {
    const outcomes: boolean[] = [];
    for (let i = 0; i < reads; i += 1) {
      const delay = await monitor.readDelay('class');
      const visible = delay >= lagMs;
      outcomes.push(visible);
      await monitor.readOutcome('class', delay, visible, false);
    }
    return outcomes;
  }

  it('learns a fixed lag from nothing in a few early reads, then sends about one in fifty too early', async () => {
    const monitor = createLagMonitor({ redis, key: key(), maxDelayMs: 300_000 });
    expect(await monitor.readDelay('class')).toBe(0);
    const outcomes = await simulate(monitor, 8_000, 600);
    const learning = outcomes.indexOf(true);
    // From nothing to 8 s by doublings from 50 ms: 8 early reads, once.
    expect(learning).toBe(8);
    const early = outcomes.slice(learning).filter((visible) => !visible).length;
    const share = early / (outcomes.length - learning);
    expect(share).toBeGreaterThan(0);
    expect(share).toBeLessThanOrEqual(1.5 * READ_EARLY_SHARE);
    const delay = await monitor.readDelay('class');
    expect(delay).toBeGreaterThanOrEqual(8_000 * 0.98);
    expect(delay).toBeLessThan(8_000 * 2);
  });

  it('reads sent together that fail together double the delay once, not once each', async () => {
    const monitor = createLagMonitor({ redis, key: key(), maxDelayMs: 300_000 });
    await monitor.readOutcome('class', 1_000, false, false);
    const delay = await monitor.readDelay('class');
    expect(delay).toBe(2_000);
    // Ten batches acknowledged together, each read when the schedule said, none finding its class yet.
    for (let i = 0; i < 10; i += 1) await monitor.readOutcome('class', delay + i, false, false);
    expect(await monitor.readDelay('class')).toBe(2 * (delay + 9));
  });

  it("takes back a gone write's raises when it raised last, and no one else's", async () => {
    const monitor = createLagMonitor({ redis, key: key(), maxDelayMs: 300_000 });
    await monitor.readOutcome('class', 500, false, false, 'other');
    await monitor.readOutcome('class', 1_000, false, false, 'gone');
    await monitor.readOutcome('class', 2_000, false, false, 'gone');
    expect(await monitor.readDelay('class')).toBe(4_000);
    await monitor.forget('class', 'gone');
    // Back to where the other write had put it.
    expect(await monitor.readDelay('class')).toBe(1_000);
    // A write that did not raise it last changes nothing.
    await monitor.readOutcome('class', 1_500, false, false, 'late');
    await monitor.forget('class', 'other');
    expect(await monitor.readDelay('class')).toBe(3_000);
  });

  it('does not creep up on late successes, and comes down when the lag does', async () => {
    const monitor = createLagMonitor({ redis, key: key(), maxDelayMs: 300_000 });
    await simulate(monitor, 8_000, 200);
    // Reads sent late (a busy queue) that succeed lower the delay; they never raise it.
    for (let i = 0; i < 50; i += 1) await monitor.readOutcome('class', 40_000, true, false);
    expect(await monitor.readDelay('class')).toBeLessThan(8_000);
    await simulate(monitor, 1_000, 400);
    expect(await monitor.readDelay('class')).toBeLessThan(1_000 * 2);
  });

  it('never puts a read off past its cap, and a failure at an age sets at least that age', async () => {
    const monitor = createLagMonitor({ redis, key: key(), maxDelayMs: 5_000 });
    expect(await monitor.readOutcome('link', 2_000, false, false)).toBe(4_000);
    expect(await monitor.readOutcome('link', 60_000, false, false)).toBe(5_000);
    expect(await monitor.readDelay('link')).toBe(5_000);
    expect(await monitor.readDelay('class')).toBe(0);
  });

  it('reads as "nothing known" when Redis cannot be asked: a read goes out at once, settling gets no evidence', async () => {
    const closed = createRedis(REDIS_URL, 'worker');
    await closed.quit();
    const monitor = createLagMonitor({ redis: closed, key: key(), maxDelayMs: 300_000 });
    expect(await monitor.readDelay('class')).toBe(0);
    expect(await monitor.readOutcome('class', 1_000, false, true)).toBe(0);
    expect(await monitor.estimate()).toBeUndefined();
  });
});
