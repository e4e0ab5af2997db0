// Nothing accepted is lost: a worker stopped mid-run, Redis losing every job, wrong credentials.
import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { batchClasses } from '../../src/db/schema/index.ts';
import { publishBatches } from '../../src/events/publish.ts';
import { createLogger } from '../../src/logger.ts';
import { createRuntime } from '../../src/runtime.ts';
import { createSyncWorker } from '../../src/sync/worker.ts';
import { createHarness, type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (open.length) await open.pop()!();
});

async function harness(overrides: Record<string, string> = {}): Promise<Harness> {
  const h = await createHarness(overrides);
  open.push(() => h.close());
  return h;
}

const events = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({ batchId: `${prefix}-${i}`, name: `${prefix} class ${i}`, subject: 'Geography' }));

async function states(h: Harness) {
  const rows = await h.runtime.database.db.select().from(batchClasses);
  return { rows, synced: rows.filter((r) => r.state === 'synced').length };
}

describe('recovery', () => {
  it('a worker stopped mid-run and started again: no duplicate, no loss', async () => {
    const h = await harness();
    h.sandbox.faults.set({ latencyMs: 40, latencyJitterMs: 40 });
    await publishBatches(publishDepsOf(h), events('stop', 60));
    const first = createSyncWorker(h.runtime, { autoSweep: false });
    await waitFor(async () => (await states(h)).synced >= 10, 'some batches synced');
    // Force-close: active jobs are abandoned mid-call, exactly as a crash would leave them.
    await first.close(0);
    const partial = (await states(h)).synced;
    expect(partial).toBeLessThan(60);

    const second = createSyncWorker(h.runtime, { autoSweep: false });
    open.push(() => second.close(5_000));
    await waitFor(async () => (await states(h)).synced === 60, 'all 60 synced after restart', 60_000);
    const truth = h.sandbox.state();
    for (let i = 0; i < 60; i++) expect(truth.byName[`stop class ${i}`]).toBe(1);
  });

  it('Redis loses every job: the sweep re-enqueues from Postgres and all batches sync', async () => {
    const h = await harness({ SYNC_STUCK_AFTER: '0ms' });
    const outcomes = await publishBatches(publishDepsOf(h), events('lost', 25));
    expect(outcomes.every((o) => o.ok && o.queued)).toBe(true);
    await h.runtime.queue.obliterate({ force: true });
    expect(await h.runtime.queue.count()).toBe(0);

    const worker = createSyncWorker(h.runtime, { autoSweep: false });
    open.push(() => worker.close(5_000));
    const sweep = await worker.sweep();
    expect(sweep).toEqual({ examined: 25, requeued: 25 });
    await waitFor(async () => (await states(h)).synced === 25, 'all 25 synced after the sweep');
    expect(h.sandbox.state().classCount).toBe(25);
    // A second sweep finds nothing left to do.
    expect((await worker.sweep()).requeued).toBe(0);
  });

  it('events accepted while Redis is unreachable are recorded and synced once it is back', async () => {
    const h = await harness({ SYNC_STUCK_AFTER: '0ms' });
    const offline = createRuntime({ ...h.config, redisUrl: 'redis://127.0.0.1:1' }, { logger: createLogger({ level: 'silent' }) });
    open.push(() => offline.close());
    const outcomes = await publishBatches(
      { ...publishDepsOf(h), queue: offline.queue },
      events('offline', 5),
    );
    expect(outcomes.every((o) => o.ok && o.state === 'pending' && !o.queued)).toBe(true);
    const worker = createSyncWorker(h.runtime, { autoSweep: false });
    open.push(() => worker.close(5_000));
    expect((await worker.sweep()).requeued).toBe(5);
    await waitFor(async () => (await states(h)).synced === 5, 'all 5 synced');
  }, 60_000);

  it.each([
    ['x-api-key', { xApiKey: 'not-the-issued-key' }, /x-api-key/],
    ['Basic key', { apiKey: 'Z'.repeat(32) }, /credentials/i],
    ['namespace header', { namespaceHeader: 'x-wise-namespace' }, /namespace/],
  ] as const)('wrong %s → failed with a message naming the cause, no retries burned', async (_what, wrong, cause) => {
    const h = await harness();
    const config = { ...h.config, classroom: { ...h.config.classroom, ...wrong } };
    const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
    open.push(() => runtime.close());
    await publishBatches(publishDepsOf(h), events('creds', 3));
    const worker = createSyncWorker(runtime, { autoSweep: false });
    open.push(() => worker.close(5_000));
    await waitFor(async () => (await states(h)).rows.every((r) => r.state === 'failed'), 'all failed');
    const { rows } = await states(h);
    for (const row of rows) {
      expect(row.attempts).toBe(1);
      expect(row.lastErrorKind).toBe('rejected');
      expect(row.lastError).toMatch(cause);
    }
    const job = await h.runtime.queue.getJob((await h.runtime.queue.getJobs(['failed']))[0]!.id!);
    expect(job?.attemptsMade).toBe(1);
    expect(h.sandbox.state().classCount).toBe(0);
    expect(h.sandbox.state().calls.byOperation.addClass?.calls).toBe(3);
  });
});
