// Reads of our own writes are sent when the account's measured lag says they will find them
// (src/sync/read-schedule.ts), as delayed jobs that free their worker slot; what one process
// learned, every process of the account starts from (src/sync/lag-monitor.ts, in Redis).
import { describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { lagKey } from '../../src/ratelimit/keys.ts';
import { createLagMonitor } from '../../src/sync/lag-monitor.ts';
import { untilAllSynced } from '../helpers/batches.ts';
import { type Harness, publishDepsOf } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';

const each = useHarnessPerTest();
// These tests count calls: CLASSROOM_TIMEOUT is the remote's own, not the harness's 1 s, or a call
// slowed by a loaded machine would time out and rightly be sent again, one call more.

/** What another process of the account learned: reads of either kind find their write after `lagMs`. */
async function learned(h: Harness, lagMs: number): Promise<number> {
  const account = h.config.accounts[0]!;
  await h.runtime.redis.ping();
  const monitor = createLagMonitor({
    redis: h.runtime.redis,
    key: lagKey({ queuePrefix: h.config.queuePrefix, classroom: account.classroom }),
    maxDelayMs: 60_000,
  });
  await monitor.readOutcome('link', lagMs, false, false);
  return monitor.readOutcome('class', lagMs, false, false);
}

const events = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ batchId: `${prefix}-${i}`, name: `${prefix} ${i}`, subject: 'Music' }));

/** The remote calls of the test's batches, in the order they were recorded. */
async function calls(h: Harness): Promise<Array<{ batchId: string; operation: string; outcome: string }>> {
  const { rows } = await h.runtime.database.pool.query<{ batch_id: string; operation: string; outcome: string }>(
    `select b.batch_id, e.operation, e.outcome from batch_events e join batch_classes b on b.id = e.batch_row_id
      where e.type = 'remote_call' order by e.at - e.duration_ms * interval '1 ms', e.id`,
  );
  return rows.map((r) => ({ batchId: r.batch_id, operation: r.operation, outcome: r.outcome }));
}

describe('read schedule', () => {
  it('a worker starts from the lag the fleet measured: no read is refused, three calls a batch', async () => {
    const h = await each.harness({ env: { SYNC_READ_LAG: '2s', CLASSROOM_TIMEOUT: '15s' } });
    // Each class, then each join link, is visible after its own delay in [0, 1 s].
    h.sandbox.faults.set({ readLagMs: 1_000 });
    expect(await learned(h, 1_000)).toBeGreaterThan(1_000);
    each.syncWorker(h.runtime);
    await publishBatches(publishDepsOf(h), events('sched', 6));
    await untilAllSynced(h, { count: 6 }, 60_000);

    const { totalCalls, byOperation } = h.sandbox.state().calls;
    expect(byOperation.editClass?.outcomes.notFound ?? 0).toBe(0);
    expect(byOperation.getClass?.outcomes.notFound ?? 0).toBe(0);
    // A get-class that found no join link yet would be a fourth call.
    expect(totalCalls).toBe(18);
  });

  it('a batch waiting for its read holds no worker slot: the next batch is created meanwhile', async () => {
    const h = await each.harness({ env: { SYNC_READ_LAG: '2s', SYNC_CONCURRENCY: '1', CLASSROOM_TIMEOUT: '15s' } });
    await learned(h, 3_000);
    each.syncWorker(h.runtime);
    await publishBatches(publishDepsOf(h), events('slot', 2));
    await untilAllSynced(h, { count: 2 }, 60_000);

    // One worker slot: a run that waited in place for its read would finish its batch before the next add-class.
    const order = (await calls(h)).map((c) => c.operation);
    expect(order).toEqual(['addClass', 'addClass', 'editClass', 'editClass', 'getClass', 'getClass']);
  });

  it('a fresh account pays for learning a fixed lag with its first batch; the next eight send no read too early', async () => {
    const h = await each.harness({ env: { SYNC_READ_LAG: '2s', CLASSROOM_TIMEOUT: '15s' } });
    h.sandbox.faults.set({ readLagMinMs: 1_000, readLagMs: 1_000 });
    each.syncWorker(h.runtime);
    await publishBatches(publishDepsOf(h), events('first', 1));
    await untilAllSynced(h, { count: 1 }, 60_000);
    const learning = h.sandbox.state().calls.totalCalls;
    const learnt = JSON.stringify(h.sandbox.state().calls.byOperation);
    // Refused reads of the class (404) and of its link (no link yet) before each was found.
    expect(learning).toBeGreaterThan(3);

    await publishBatches(publishDepsOf(h), events('next', 8));
    await untilAllSynced(h, { count: 9 }, 60_000);
    const { totalCalls, byOperation } = h.sandbox.state().calls;
    expect(totalCalls - learning, `${learnt} then ${JSON.stringify(byOperation)}`).toBe(24);
  });

  it('with no lag learned, a batch goes from add-class to synced in one run, never through the queue', async () => {
    const h = await each.harness({ env: { SYNC_READ_LAG: '2s', CLASSROOM_TIMEOUT: '15s' } });
    const results: string[] = [];
    each.syncWorker(h.runtime, { onJobResult: (result) => results.push(result) });
    await publishBatches(publishDepsOf(h), events('now', 5));
    await untilAllSynced(h, { count: 5 }, 60_000);
    // The run's view of the database's clock trails the clock its writes are stamped by: a read due
    // "now" must not look a few ms early and send the job back to wait.
    expect(results).toEqual(['completed', 'completed', 'completed', 'completed', 'completed']);
    expect(h.sandbox.state().calls.totalCalls).toBe(15);
  });
});
