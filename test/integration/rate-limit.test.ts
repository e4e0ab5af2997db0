// One budget of remote calls per API key, shared by every worker process through Redis.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { createRateLimiter } from '../../src/ratelimit/limiter.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { manualClock } from '../helpers/clock.ts';
import { untilAllSynced } from '../helpers/batches.ts';
import { publishDepsOf, REDIS_URL, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';

const each = useHarnessPerTest();

describe('shared rate limit', () => {
  it('two worker runtimes together stay under the remote limit: no 429 from a strict sliding-window remote', async () => {
    // Remote: 40 calls per sliding second. Ours: 20 per second (1,200/min), shared by both runtimes.
    // The margin is for this test's machine, not the product: the sandbox shares the test process's
    // event loop, so a CPU stall on a loaded CI box delivers several slots' calls at once.
    // The remote's own timeout, not the harness's 1 s: this test counts calls, and a timeout on a loaded
    // machine is an edit sent again (one call more, rightly).
    const h = await each.harness({ env: { CLASSROOM_RATE_LIMIT_PER_MINUTE: '1200', SYNC_CONCURRENCY: '16', CLASSROOM_TIMEOUT: '15s' } });
    h.sandbox.faults.set({ rateLimitPerMinute: 40, rateLimitWindowMs: 1_000 });
    const second = each.runtime(h.config);
    each.syncWorker(h.runtime);
    each.syncWorker(second);

    const events = Array.from({ length: 30 }, (_, i) => ({ batchId: `rl-${i}`, name: `Rate ${i}`, subject: 'Music' }));
    await publishBatches(publishDepsOf(h), events);
    await untilAllSynced(h, { count: 30 }, 60_000);

    const calls = h.sandbox.state().calls;
    const rateLimited = Object.values(calls.byOperation).reduce((sum, op) => sum + (op.outcomes.rateLimited ?? 0), 0);
    expect(rateLimited).toBe(0);
    expect(calls.byOperation.addClass?.calls).toBe(30);
    expect(calls.totalCalls).toBe(90);
  });

  it('without the shared limit the same remote answers 429 (the check above can fail)', async () => {
    const h = await each.harness({ env: { CLASSROOM_RATE_LIMIT_PER_MINUTE: '600000', SYNC_CONCURRENCY: '16' } });
    h.sandbox.faults.set({ rateLimitPerMinute: 40, rateLimitWindowMs: 1_000 });
    each.syncWorker(h.runtime);
    await publishBatches(
      publishDepsOf(h),
      Array.from({ length: 30 }, (_, i) => ({ batchId: `free-${i}`, name: `Free ${i}`, subject: 'Music' })),
    );
    await waitFor(() => {
      const calls = h.sandbox.state().calls;
      return Object.values(calls.byOperation).some((op) => (op.outcomes.rateLimited ?? 0) > 0);
    }, 'a 429 from the remote');
    // 429s slow the fleet but burn no attempt and create nothing twice.
    await untilAllSynced(h, { count: 30 }, 90_000);
    expect(Object.values(h.sandbox.state().byName).every((count) => count === 1)).toBe(true);
  });

  it('a pause set by one process holds back another process sharing the key', async () => {
    const redisA = createRedis(REDIS_URL, 'worker');
    const redisB = createRedis(REDIS_URL, 'worker');
    each.defer(() => redisA.quit());
    each.defer(() => redisB.quit());
    const key = `cs-test-limiter-${randomBytes(4).toString('hex')}`;
    each.defer(() => redisA.del(key));
    // b sleeps until its slot on a clock the test moves: the pause is seen in how long b is told to wait.
    const clock = manualClock();
    const a = createRateLimiter({ redis: redisA, key, callsPerMinute: 600_000 });
    const b = createRateLimiter({ redis: redisB, key, callsPerMinute: 600_000, clock });
    // A fresh budget: the first slot is now, no sleep.
    expect((await b.acquire()).waitedMs).toBe(0);
    // Long enough that Redis round trips between the pause and b's reservation cannot eat it.
    await a.pause(2_000);
    let acquired = false;
    const held = b.acquire().finally(() => {
      acquired = true;
    });
    await waitFor(() => clock.pending() === 1, 'b to sleep until its slot');
    const [wait = 0] = clock.dueIn();
    expect(wait).toBeGreaterThanOrEqual(1_500);
    await clock.advance(wait - 1);
    expect(acquired).toBe(false);
    await clock.advance(1);
    expect(await held).toMatchObject({ waitedMs: wait });
  });

  it('refuses a slot further away than its maximum wait, without reserving it', async () => {
    const redis = createRedis(REDIS_URL, 'worker');
    each.defer(() => redis.quit());
    const key = `cs-test-limiter-max-${randomBytes(4).toString('hex')}`;
    each.defer(() => redis.del(key));
    const limiter = createRateLimiter({ redis, key, callsPerMinute: 60, maxWaitMs: 100 });
    await limiter.acquire();
    await expect(limiter.acquire()).rejects.toThrow(/more than 100 ms away/);
  });
});
