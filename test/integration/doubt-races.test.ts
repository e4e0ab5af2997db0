// Races an adversarial review found around the doubt rule (docs/reliability.md, "The doubt rule"): a
// cancel that meets a refused add-class, edits and archives overtaken by an earlier edit the remote
// acts on late, and "not listed" believed before a late add-class could have taken effect. Runs are
// driven one at a time with runBatch (test/helpers/runs.ts) against real PostgreSQL, Redis and the
// sandbox.
import { beforeEach, describe, expect, it } from 'vitest';
import { publishBatchCancelled, publishBatchCreated, publishBatchUpdated } from '../../src/intake/publish.ts';
import { type SyncDeps, runBatch } from '../../src/sync/machine.ts';
import { rowOf } from '../helpers/batches.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { RUN_SETTINGS, addClassCalls, keyOf, messagesOf, runDeps, runOnce, runToRest, watchedClient } from '../helpers/runs.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h } = useHarness();
beforeEach(() => h.sandbox.faults.clear());

const remoteClass = (x: Harness, classId: string | null) => x.sandbox.state().classes?.find((c) => c.id === classId);
/** Late effects the sandbox has applied so far: a test waits for one rather than for a time. */
const lateApplied = () => h.sandbox.state({ classes: false }).calls.lateEffectsApplied;

/** Published and synced: one class, its link stored. */
async function synced(batchId: string, name: string, subject = 'Maths') {
  await publishBatchCreated(publishDepsOf(h), { batchId, name, subject, version: 1 });
  const row = await runToRest(h, batchId);
  expect(row.state, 'precondition: synced').toBe('synced');
  return row;
}

describe('a cancel recorded while the add-class is in flight, and the add-class then refused', () => {
  it('ends cancelled (nothing was made, nobody wants a class), not failed; the last webhook is batch.cancelled', async () => {
    const deps = publishDepsOf(h);
    await publishBatchCreated(deps, { batchId: 'b1', name: 'Break 1', subject: 'Logic', version: 1 });
    // The remote refuses the add-class (nothing is made); its answer is held until the cancel is in.
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
    const run = watchedClient(h, 'b1', { operation: 'addClass', at: 'afterEffect' });
    const running = runOnce(h, 'b1', run.client);
    await run.reached;
    const cancelled = await publishBatchCancelled(deps, { batchId: 'b1', version: 2 });
    expect(cancelled.state, 'the cancel waits: an add-class is in flight').toBe('creating');
    run.resume();
    await running;
    const row = await rowOf(h, 'b1');
    expect(row, 'the refusal proved nothing was made').toMatchObject({ classId: null, createSentAt: null, cancelledAt: expect.any(Date) });
    // The design: a cancel of a batch with nothing sent ends it `cancelled`. A second cancel is
    // "already cancelled" and does nothing, so nothing but an operator would ever apply this one.
    expect(row?.state, 'at rest with the integrator’s cancel recorded and nothing sent').toBe('cancelled');
    expect((await messagesOf(h, 'b1')).at(-1)?.type, 'the last word').toBe('batch.cancelled');
  });
});

describe('an edit-class of unknown outcome and a later edit (a remote that acts late)', () => {
  it('a synced batch at rest carries the newest subject, not the one of an edit whose answer was lost', async () => {
    const row = await synced('b2a', 'Break 2a');
    // v2's edit reaches the remote but is acted on late (after our client gave up, within the
    // CLASSROOM_TIMEOUT the docs allow a remote for that): outcome unknown, the run lets go.
    const late = lateApplied();
    h.sandbox.faults.set({ lateEffectMs: 1_800 });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'lateEffect' });
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'b2a', subject: 'Physics', version: 2 });
    const first = await runOnce(h, 'b2a');
    expect(first.error, 'precondition: the edit timed out').toBeDefined();
    // v3 arrives, and its run edits the class at once.
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'b2a', subject: 'Chemistry', version: 3 });
    const rest = await runToRest(h, 'b2a');
    expect(rest).toMatchObject({ state: 'synced', classId: row.classId });
    // Once the late edit has taken effect, the class is as the batch says: the newer edit waited for it.
    await waitFor(() => lateApplied() > late, 'the late edit to take effect');
    expect(remoteClass(h, row.classId)?.subject, 'the newest accepted subject, told by batch.updated').toBe('Chemistry');
  });

  it('a batch at rest in cancelled has no visible class, even when the reopen before it was acted on late', async () => {
    const row = await synced('b2b', 'Break 2b');
    await publishBatchCancelled(publishDepsOf(h), { batchId: 'b2b', version: 2 });
    expect((await runToRest(h, 'b2b')).state, 'precondition: cancelled, archived').toBe('cancelled');
    // Reopened: its run's edit (archived:false, the new name) is acted on late, its answer lost.
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'b2b', name: 'Break 2b reopened', version: 3 });
    const late = lateApplied();
    h.sandbox.faults.set({ lateEffectMs: 1_800 });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'lateEffect' });
    const first = await runOnce(h, 'b2b');
    expect(first.error, 'precondition: the unarchiving edit timed out').toBeDefined();
    // Cancelled again: the next run archives the class and ends the batch cancelled.
    await publishBatchCancelled(publishDepsOf(h), { batchId: 'b2b', version: 4 });
    const rest = await runToRest(h, 'b2b');
    expect(rest.state).toBe('cancelled');
    await waitFor(() => lateApplied() > late, 'the late unarchive to take effect');
    expect(remoteClass(h, row.classId), 'the class of a batch at rest in cancelled').toMatchObject({ archived: true });
  });
});

describe('"not listed" believed only once the add-class can no longer take effect', () => {
  it('an add-class the remote acts on late (within CLASSROOM_TIMEOUT of the give-up) is never sent twice', async () => {
    // SYNC_READ_LAG 100 ms (patience: 1 s after the add-class was sent); CLASSROOM_TIMEOUT 1 s.
    const deps: SyncDeps = { ...runDeps(h), settings: { ...RUN_SETTINGS, readLagMs: 100 } };
    await publishBatchCreated(publishDepsOf(h), { batchId: 'b3', name: 'Break 3', subject: 'Logic', version: 1 });
    const before = addClassCalls(h);
    // The remote takes the add-class in but acts on it 1.5 s later, after our client gave up (1 s):
    // by docs/reliability.md, a class is made, if at all, by the call's end + CLASSROOM_TIMEOUT (2 s).
    const late = lateApplied();
    h.sandbox.faults.set({ lateEffectMs: 1_500 });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lateEffect' });
    await runBatch(deps, keyOf(h, 'b3'), 1).catch(() => undefined);
    expect(await rowOf(h, 'b3'), 'precondition: in doubt').toMatchObject({ state: 'creating', classId: null });
    // The next runs read the listing at once (no settle delay): nothing is listed until the late effect.
    await waitFor(async () => {
      await runBatch(deps, keyOf(h, 'b3'), 2).catch(() => undefined);
      return (await rowOf(h, 'b3'))?.state === 'synced';
    }, 'b3 synced');
    await waitFor(() => lateApplied() > late, 'the late add-class to take effect');
    expect(addClassCalls(h) - before, 'add-class requests').toBe(1);
    expect(h.sandbox.state().byName['Break 3'], 'classes of the batch').toBe(1);
  });
});

describe('an edit whose answer was lost, then the batch changed again', () => {
  it('a change back to the old subject is sent: the class does not keep the subject of the lost edit', async () => {
    const row = await synced('b4', 'Break 4', 'Maths');
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'b4', subject: 'Physics', version: 2 });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'lostResponse' });
    expect((await runOnce(h, 'b4')).error, 'precondition: the edit took effect, its answer lost').toBeDefined();
    expect(remoteClass(h, row.classId)?.subject).toBe('Physics');
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'b4', subject: 'Maths', version: 3 });
    expect(await runToRest(h, 'b4')).toMatchObject({ state: 'synced', appliedRevision: 2 });
    expect(remoteClass(h, row.classId)?.subject).toBe('Maths');
  });

  it('a re-send the remote refuses reads the class back: the row and batch.updated tell the name the lost edit gave it', async () => {
    const row = await synced('b5', 'Break 5');
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'b5', name: 'Break 5 renamed', version: 2 });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'lostResponse' });
    expect((await runOnce(h, 'b5')).error, 'precondition: the rename took effect, its answer lost').toBeDefined();
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'bodyRejected' });
    const rest = await runToRest(h, 'b5');
    expect(rest).toMatchObject({ state: 'synced', className: 'Break 5 renamed', remoteName: 'Break 5 renamed', lastErrorKind: 'rejected' });
    expect(remoteClass(h, row.classId)?.name).toBe('Break 5 renamed');
    expect((await messagesOf(h, 'b5')).at(-1)).toMatchObject({ type: 'batch.updated', data: { className: 'Break 5 renamed', state: 'synced' } });
  });
});
