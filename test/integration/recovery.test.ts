import { describe, expect, it } from 'vitest';
import { withClassroom } from '../../src/config/config.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { rowsOf } from '../helpers/batches.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { bothQueues } from '../../src/sync/queue.ts';

const each = useHarnessPerTest();

// Names none of which is a prefix of another: after an add-class of unknown outcome, a listed
// "outage class 1" is a plausible cut of "outage class 10", and the batch rightly goes to review.
const nameOf = (prefix: string, i: number) => `${prefix} class ${String(i).padStart(3, '0')}`;
const events = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({ batchId: `${prefix}-${i}`, name: nameOf(prefix, i), subject: 'Geography' }));

async function states(h: Harness) {
  const rows = await rowsOf(h);
  return { rows, synced: rows.filter((r) => r.state === 'synced').length };
}

/** Each unsynced batch's row and its job's state in either queue (a failure's report). */
async function diagnose(h: Harness) {
  const rows = (await rowsOf(h)).filter((r) => r.state !== 'synced');
  return Promise.all(
    rows.map(async (r) => {
      const jobs = await Promise.all(bothQueues(h.runtime.queue).map((q) => q.getJobState(jobIdFor(r))));
      return { batchId: r.batchId, state: r.state, attempts: r.attempts, lastError: r.lastError, lease: r.leaseExpiresAt, jobs };
    }),
  );
}

describe('recovery', () => {
  it('a remote down for longer than every attempt: no batch is written off, all sync once it is back', async () => {
    const h = await each.harness({ env: { SYNC_ATTEMPTS: '2', SYNC_BACKOFF_MAX: '400ms' } });
    // Every call answers 503 (add-class included: its outcome is unknown, so it is settled by reading).
    h.sandbox.faults.set({ rates: { error5xx: 1 } });
    await publishBatches(publishDepsOf(h), events('outage', 12));
    each.syncWorker(h.runtime);
    await waitFor(async () => (await rowsOf(h)).every((r) => r.attempts === 2 && r.lastError !== null) || undefined, 'every attempt used', 20_000);
    // Well past the attempts (the remote has been called twice more per batch since): nothing
    // failed, each batch keeps its last error for status to show.
    const spent = h.sandbox.state({ classes: false }).calls.totalCalls;
    await waitFor(() => h.sandbox.state({ classes: false }).calls.totalCalls >= spent + 2 * 12, 'the batches to be tried again past their attempts', 20_000);
    const during = await rowsOf(h);
    expect(during.filter((r) => r.state === 'failed')).toEqual([]);
    expect(new Set(during.map((r) => r.lastErrorKind))).toEqual(new Set(['outcome_unknown']));

    h.sandbox.faults.clear();
    await waitFor(async () => (await states(h)).synced === 12 || undefined, 'all 12 synced once the remote is back', 30_000).catch(async (error) => {
      throw new Error(`${(error as Error).message}; batches and their jobs: ${JSON.stringify(await diagnose(h))}`);
    });
    const truth = h.sandbox.state();
    for (let i = 0; i < 12; i++) expect(truth.byName[nameOf('outage', i)], nameOf('outage', i)).toBe(1);
    expect((await rowsOf(h)).every((r) => r.attempts === 2)).toBe(true);
  });

  it('a worker stopped mid-run and started again: no duplicate, no loss', async () => {
    const h = await each.harness();
    h.sandbox.faults.set({ latencyMs: 40, latencyJitterMs: 40 });
    await publishBatches(publishDepsOf(h), events('stop', 60));
    const first = each.syncWorker(h.runtime);
    await waitFor(async () => (await states(h)).synced >= 10, 'some batches synced');
    // Force-close: active jobs are abandoned mid-call, exactly as a crash would leave them.
    await first.close(0);
    const partial = (await states(h)).synced;
    expect(partial).toBeLessThan(60);

    each.syncWorker(h.runtime);
    await waitFor(async () => (await states(h)).synced === 60, 'all 60 synced after restart', 60_000);
    const truth = h.sandbox.state();
    for (let i = 0; i < 60; i++) expect(truth.byName[nameOf('stop', i)]).toBe(1);
  });

  it('Redis loses every job: the sweep re-enqueues from Postgres and all batches sync', async () => {
    const h = await each.harness({ env: { SYNC_STUCK_AFTER: '0ms' } });
    const outcomes = await publishBatches(publishDepsOf(h), events('lost', 25));
    expect(outcomes.every((o) => o.ok && o.queued)).toBe(true);
    await h.runtime.queue.obliterate({ force: true });
    expect(await h.runtime.queue.count()).toBe(0);

    const worker = each.syncWorker(h.runtime);
    const sweep = await worker.sweep();
    expect(sweep).toMatchObject({ examined: 25, requeued: 25 });
    await waitFor(async () => (await states(h)).synced === 25, 'all 25 synced after the sweep');
    expect(h.sandbox.state().classCount).toBe(25);
    // A second sweep finds nothing left to do.
    expect((await worker.sweep()).requeued).toBe(0);
  });

  it('events accepted while Redis is unreachable are recorded and synced once it is back', async () => {
    const h = await each.harness({ env: { SYNC_STUCK_AFTER: '0ms' } });
    const offline = each.runtime({ ...h.config, redisUrl: 'redis://127.0.0.1:1' });
    const outcomes = await publishBatches({ ...publishDepsOf(h), queue: offline.queue }, events('offline', 5));
    expect(outcomes.every((o) => o.ok && o.state === 'pending' && !o.queued)).toBe(true);
    const worker = each.syncWorker(h.runtime);
    expect((await worker.sweep()).requeued).toBe(5);
    await waitFor(async () => (await states(h)).synced === 5, 'all 5 synced');
  }, 60_000);

  it.each([
    ['x-api-key', { xApiKey: 'not-the-issued-key' }, /x-api-key/],
    ['Basic key', { apiKey: 'Z'.repeat(32) }, /credentials/i],
    ['namespace header', { namespaceHeader: 'x-wise-namespace' }, /namespace/],
  ] as const)('wrong %s → the batches wait, unchanged, naming the cause; once fixed they sync with no retry', async (_what, wrong, cause) => {
    const h = await each.harness({ env: { CLASSROOM_KEY_PROBE_EVERY: '200ms' } });
    const config = withClassroom(h.config, wrong);
    const runtime = each.runtime(config);
    await publishBatches(publishDepsOf(h), events('creds', 3));
    const worker = each.syncWorker(runtime);
    const refused = await waitFor(() => runtime.remotes.default.breaker.state(), 'the credentials breaker to open');
    expect(refused.reason).toMatch(cause);
    // Give the wrong key time to do damage (three more of its calls refused): it must write nothing off and create nothing.
    const refusedSoFar = h.sandbox.state({ classes: false }).calls.totalCalls;
    await waitFor(() => h.sandbox.state({ classes: false }).calls.totalCalls >= refusedSoFar + 3, 'three more calls with the wrong key');
    // A run that sent its add-class before the breaker opened is still `creating` until it has read its
    // refusal and put the batch back (seen on a loaded machine): judge the rows once no run holds one.
    const settled = await waitFor(async () => {
      const { rows } = await states(h);
      return rows.every((r) => r.leaseExpiresAt === null) && rows;
    }, 'no run holding a batch');
    for (const row of settled) {
      expect(row).toMatchObject({ state: 'pending', lastError: null, classId: null });
      expect(row.attempts).toBeLessThanOrEqual(1);
    }
    expect(h.sandbox.state().classCount).toBe(0);
    expect(h.sandbox.state().calls.byOperation.addClass?.calls ?? 0).toBeLessThanOrEqual(3);
    await worker.close(5_000);

    // The operator fixes the setting and restarts the workers: nothing to retry.
    each.syncWorker(h.runtime);
    await waitFor(async () => (await states(h)).rows.every((r) => r.state === 'synced'), 'all synced after the fix');
    expect((await states(h)).rows.map((r) => r.attempts)).toEqual([1, 1, 1]);
    expect(h.sandbox.state().classCount).toBe(3);
  });
});
