// The doubt rule (docs/reliability.md), each path where it was broken: an add-class
// whose outcome is in doubt must end in waiting or needs_review, never `failed`, `cancelled` or a
// second add-class; and nothing writes or calls the remote for a batch without the lease. Runs are driven one at a
// time with runBatch (test/helpers/runs.ts) against real PostgreSQL, Redis and the sandbox; the
// exhaustion tests go through the queue's processor, where exhaustion is handled.
import type { Job } from 'bullmq';
import { beforeEach, describe, expect, it } from 'vitest';
import { publishBatchCancelled, publishBatchCreated, publishBatchUpdated } from '../../src/intake/publish.ts';
import type { SyncJobData, SyncResult } from '../../src/sync/queue.ts';
import { createSyncProcessor } from '../../src/sync/processor.ts';
import { rowOf, untilTerminal } from '../helpers/batches.ts';
import { type Harness, publishDepsOf } from '../helpers/harness.ts';
import { RUN_SETTINGS, addClassCalls, keyOf, messagesOf, runOnce, runToRest, watchedClient } from '../helpers/runs.ts';
import { useHarness } from '../helpers/use-harness.ts';

/** The remote's classes by the name last sent for them (add-class or a rename), those starting with `prefix`. */
const sentNames = (h: Harness, prefix: string) => Object.fromEntries(Object.entries(h.sandbox.state().bySentName).filter(([name]) => name.startsWith(prefix)));

/** A batch whose add-class made its class but whose answer was lost: `creating`, no lease held. */
async function inDoubt(h: Harness, batchId: string, name: string): Promise<void> {
  await publishBatchCreated(publishDepsOf(h), { batchId, name, subject: 'Logic', version: 1 });
  h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
  await runOnce(h, batchId);
  expect(await rowOf(h, batchId), 'precondition: the add-class is in doubt').toMatchObject({ state: 'creating', classId: null, leaseExpiresAt: null });
  expect(sentNames(h, name)).toEqual({ [name]: 1 });
}

/**
 * The processor's run of a job on its last attempt that fails before it holds the batch's lease (its
 * account cannot be looked up): exhaustion found outside a run, as the design calls it.
 */
function exhaustOutsideRun(h: Harness, batchId: string): Promise<SyncResult> {
  const process = createSyncProcessor({
    db: h.runtime.database.db,
    logger: h.runtime.logger,
    workerId: 'exhausted-job',
    settings: RUN_SETTINGS,
    accountFor: () => {
      throw new Error('the account registry could not be read');
    },
  });
  const job: Pick<Job<SyncJobData, SyncResult>, 'id' | 'name' | 'data' | 'attemptsMade' | 'opts'> = {
    id: `exhausted-${batchId}`,
    name: 'exhausted',
    data: { ...keyOf(h, batchId), lane: 'live' },
    attemptsMade: 0,
    opts: { attempts: 1 },
  };
  return process(job as Job<SyncJobData, SyncResult>);
}

const { h } = useHarness();
beforeEach(() => h.sandbox.faults.clear());

describe('an add-class in doubt: settled, never failed or cancelled', () => {
  it('1a: a refused listing while the add-class is in doubt is retried (listing_refused), never failed; the next listing adopts the one class', async () => {
    const before = addClassCalls(h);
    await inDoubt(h, 'd1a', 'Doubt 1a');
    h.sandbox.faults.enqueue({ operation: 'listClasses', fault: 'bodyRejected' });
    await runOnce(h, 'd1a');
    expect(await rowOf(h, 'd1a')).toMatchObject({ state: 'creating', classId: null, lastErrorKind: 'listing_refused' });
    const rest = await runToRest(h, 'd1a');
    expect(rest.state).toBe('synced');
    expect(addClassCalls(h) - before, 'add-class requests').toBe(1);
  });

  it('1c: a cancel while the add-class is in doubt never ends it cancelled; a reopening update then sends no second add-class', async () => {
    const deps = publishDepsOf(h);
    const before = addClassCalls(h);
    await inDoubt(h, 'd1c', 'Doubt 1c');
    h.sandbox.faults.enqueue({ operation: 'listClasses', fault: 'bodyRejected' });
    await runOnce(h, 'd1c');
    // Soft: what follows shows where a cancel taken as "nothing was made" leads.
    const cancelled = await publishBatchCancelled(deps, { batchId: 'd1c', version: 2 });
    expect.soft(cancelled.state, 'a cancel while a class may exist').not.toBe('cancelled');
    expect.soft(await rowOf(h, 'd1c'), 'the cancel waits for the doubt to be settled').toMatchObject({ classId: null, cancelledAt: expect.any(Date) });
    await publishBatchUpdated(deps, { batchId: 'd1c', name: 'Doubt 1c renamed', version: 3 });
    const rest = await runToRest(h, 'd1c');
    expect(addClassCalls(h) - before, 'add-class requests: never a second one').toBe(1);
    expect(
      h.sandbox
        .state()
        .classes?.filter((c) => c.name.startsWith('Doubt 1c'))
        .map((c) => c.name),
    ).toEqual(['Doubt 1c renamed']);
    expect(rest).toMatchObject({ state: 'synced', className: 'Doubt 1c renamed', cancelledAt: null });
  });
});

describe('attempts run out while an add-class is in doubt (a worker, SYNC_ATTEMPTS=2)', () => {
  // A harness of its own: its worker must not take the jobs of the batches driven by hand above.
  const worker = useHarness({ env: { SYNC_ATTEMPTS: '2' } });

  it('1b: the listing refused on every attempt ends needs_review (a class may exist), never failed, one class', async () => {
    const own = worker.h;
    own.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    own.sandbox.faults.enqueue({ operation: 'listClasses', fault: 'bodyRejected', count: 50 });
    worker.syncWorker(own.runtime);
    await publishBatchCreated(publishDepsOf(own), { batchId: 'd1b', name: 'Doubt 1b', subject: 'Logic', version: 1 });
    const row = await untilTerminal(own, 'd1b');
    expect(row).toMatchObject({ state: 'needs_review', classId: null });
    expect(addClassCalls(own), 'add-class requests').toBe(1);
  });
});

describe('exhaustion found outside a run', () => {
  it('3a: exhaustion found outside a run leaves alone a batch whose lease another run holds', async () => {
    await publishBatchCreated(publishDepsOf(h), { batchId: 'x3a', name: 'Exhaust 3a', subject: 'Logic', version: 1 });
    // The holder made the class and enabled the link; it stops before get-class, lease held.
    const holder = watchedClient(h, 'x3a', { operation: 'getClass', at: 'beforeCall' });
    const running = runOnce(h, 'x3a', holder.client);
    await holder.reached;
    await expect(exhaustOutsideRun(h, 'x3a')).rejects.toThrow();
    expect.soft((await rowOf(h, 'x3a'))?.state, 'the holder owns the batch: exhaustion must not write').toBe('created');
    holder.resume();
    expect((await running).outcome?.state).toBe('synced');
    expect(
      (await messagesOf(h, 'x3a')).map((m) => m.type),
      'no batch.failed told for a batch that never failed',
    ).toEqual(['batch.synced']);
  });

  it('3b: exhaustion found outside a run, with the add-class in doubt: needs_review, not failed', async () => {
    await inDoubt(h, 'x3b', 'Exhaust 3b');
    await expect(exhaustOutsideRun(h, 'x3b')).rejects.toThrow();
    expect(await rowOf(h, 'x3b')).toMatchObject({ state: 'needs_review', classId: null });
  });
});

describe('a write that released the lease ends the run', () => {
  it('4: a reopen landing while the class is being archived ends the run: no call leaves without a live lease', async () => {
    const deps = publishDepsOf(h);
    await publishBatchCreated(deps, { batchId: 'l4', name: 'Lease 4', subject: 'Logic', version: 1 });
    // Class made, then the link's edit-class fails with a 5xx: `created` (mid-sync), lease released.
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'error5xx' });
    await runOnce(h, 'l4');
    expect((await rowOf(h, 'l4'))?.state, 'precondition: mid-sync').toBe('created');
    await publishBatchCancelled(deps, { batchId: 'l4', version: 2 });
    // The archive's edit-class takes effect; the run is held before it writes `cancelled`.
    const run = watchedClient(h, 'l4', { operation: 'editClass', at: 'afterEffect', when: (changes) => changes?.archived === true });
    const running = runOnce(h, 'l4', run.client);
    await run.reached;
    await publishBatchUpdated(deps, { batchId: 'l4', name: 'Lease 4 reopened', version: 3 });
    run.resume();
    await running;
    expect(run.sent.length, 'the archive was sent').toBeGreaterThan(0);
    expect(
      run.sent.filter((call) => !call.leaseLive),
      'calls sent after the write that released the lease',
    ).toEqual([]);
    // The reopen's own run unarchives and renames the one class.
    const rest = await runToRest(h, 'l4');
    expect(rest).toMatchObject({ state: 'synced', className: 'Lease 4 reopened', cancelledAt: null });
    expect(h.sandbox.state().classes?.find((c) => c.id === rest.classId)).toMatchObject({ name: 'Lease 4 reopened', archived: false });
  });
});
