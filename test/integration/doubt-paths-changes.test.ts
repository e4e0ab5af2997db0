// The doubt rule (docs/reliability.md), each path where it was broken: changes of a
// batch (renames, cancels, reopenings) on the paths where they were lost, mis-told or stuck: after a
// refused add-class, around an abandon, against a class deleted on the remote, and in the
// batch.updated webhook. Runs are driven one at a time with runBatch (test/helpers/runs.ts) against
// real PostgreSQL, Redis and the sandbox; webhook messages are read from the outbox table.
import { beforeEach, describe, expect, it } from 'vitest';
import { publishBatchCancelled, publishBatchCreated, publishBatchUpdated } from '../../src/intake/publish.ts';
import { abandonBatches, undoAbandon } from '../../src/sync/abandon-batches.ts';
import { retryBatches } from '../../src/sync/retry-batches.ts';
import { rowOf } from '../helpers/batches.ts';
import { type Harness, publishDepsOf } from '../helpers/harness.ts';
import { type WatchedClient, keyOf, messagesOf, runOnce, runToRest, watchedClient } from '../helpers/runs.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h } = useHarness();
beforeEach(() => h.sandbox.faults.clear());

const remoteClass = (classId: string | null) => h.sandbox.state().classes?.find((c) => c.id === classId);
/** The names a run's calls sent: add-class's, and any rename by edit-class. */
const namesSent = (watched: WatchedClient) => ({
  addClass: watched.sent.filter((c) => c.operation === 'addClass').map((c) => c.name),
  editClass: watched.sent.filter((c) => c.operation === 'editClass' && c.name !== undefined).map((c) => c.name),
});
const ops = (x: Harness) => ({ db: x.runtime.database.db, queue: x.runtime.queue, logger: x.runtime.logger });

/** Published and synced: one class, its link stored. */
async function synced(batchId: string, name: string, subject = 'Maths') {
  await publishBatchCreated(publishDepsOf(h), { batchId, name, subject, version: 1 });
  const row = await runToRest(h, batchId);
  expect(row.state, 'precondition: synced').toBe('synced');
  return row;
}

/** Published, and its add-class refused (nothing made): `failed`, with no add-class in doubt. */
async function refusedCreate(batchId: string, name: string) {
  await publishBatchCreated(publishDepsOf(h), { batchId, name, subject: 'Maths', version: 1 });
  h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
  await runOnce(h, batchId);
  expect(await rowOf(h, batchId), 'precondition: failed, nothing sent').toMatchObject({ state: 'failed', classId: null, createSentAt: null });
}

describe('renames and cancels of batches with no class', () => {
  it('2: a rename recorded after a refused add-class is the name the retried add-class sends', async () => {
    await refusedCreate('r2', 'Rename 2 old');
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'r2', name: 'Rename 2 new', version: 2 });
    await retryBatches(ops(h), { keys: [keyOf(h, 'r2')] });
    const watched = watchedClient(h, 'r2');
    const rest = await runToRest(h, 'r2', watched.client);
    expect(namesSent(watched), 'names sent by add-class and edit-class').toEqual({ addClass: ['Rename 2 new'], editClass: [] });
    expect(rest).toMatchObject({ state: 'synced', className: 'Rename 2 new', nextClassName: null });
    expect(remoteClass(rest.classId)?.name).toBe('Rename 2 new');
  });

  it('7: a cancel recorded while the batch is abandoned ends it cancelled at undo, told by batch.cancelled', async () => {
    await refusedCreate('a7', 'Abandon 7');
    expect((await abandonBatches(ops(h), [keyOf(h, 'a7')]))[0]?.outcome).toBe('abandoned');
    await publishBatchCancelled(publishDepsOf(h), { batchId: 'a7', version: 2 });
    const [undone] = await undoAbandon(ops(h), [keyOf(h, 'a7')]);
    expect(undone?.to, 'where the undo leaves it').toBe('cancelled');
    expect(await rowOf(h, 'a7')).toMatchObject({ state: 'cancelled', classId: null });
    expect((await messagesOf(h, 'a7')).at(-1)).toMatchObject({ type: 'batch.cancelled', data: { state: 'cancelled' } });
  });

  it('8: abandon, rename, undo, retry: the add-class sends the new name', async () => {
    await refusedCreate('a8', 'Abandon 8 old');
    expect((await abandonBatches(ops(h), [keyOf(h, 'a8')]))[0]?.outcome).toBe('abandoned');
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'a8', name: 'Abandon 8 new', version: 2 });
    await undoAbandon(ops(h), [keyOf(h, 'a8')]);
    await retryBatches(ops(h), { keys: [keyOf(h, 'a8')] });
    const watched = watchedClient(h, 'a8');
    const rest = await runToRest(h, 'a8', watched.client);
    expect(namesSent(watched), 'names sent by add-class and edit-class').toEqual({ addClass: ['Abandon 8 new'], editClass: [] });
    expect(rest).toMatchObject({ state: 'synced', className: 'Abandon 8 new', nextClassName: null });
  });
});

describe('changes of batches with a class', () => {
  it('5: cancelling a batch whose class was deleted on the remote ends it cancelled (not archived), told by batch.cancelled', async () => {
    const row = await synced('g5', 'Gone 5');
    expect(h.sandbox.store.delete(row.classId!)).toBe(true);
    await publishBatchCancelled(publishDepsOf(h), { batchId: 'g5', version: 2 });
    // No read lag (RUN_SETTINGS): the archive's 404 is past the patience at once.
    const rest = await runToRest(h, 'g5');
    expect(rest.state).toBe('cancelled');
    expect((await messagesOf(h, 'g5')).at(-1)).toMatchObject({ type: 'batch.cancelled', data: { state: 'cancelled', archived: false } });
  });

  it('6a: batch.updated carries the values the class was given (v2), not a newer event recorded meanwhile (v3, then refused)', async () => {
    const row = await synced('u6a', 'Update 6a');
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'u6a', subject: 'Physics', version: 2 });
    // v2's edit-class reaches the class; the run is held before it writes that it did.
    const run = watchedClient(h, 'u6a', { operation: 'editClass', at: 'afterEffect' });
    const running = runOnce(h, 'u6a', run.client);
    await run.reached;
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'u6a', subject: 'Biology', version: 3 });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'bodyRejected' }); // v3's edit is refused
    run.resume();
    await running;
    await runToRest(h, 'u6a');
    expect(remoteClass(row.classId)?.subject, 'what the remote holds').toBe('Physics');
    const told = (await messagesOf(h, 'u6a')).filter((m) => m.type === 'batch.updated').map((m) => ({ subject: m.data.subject, version: m.data.version }));
    expect(told, 'batch.updated messages').toEqual([{ subject: 'Physics', version: 2 }]);
  });

  it("6b: archiving a class while its batch is reopened tells no batch.updated; the reopen's edit tells one, with the new name", async () => {
    const row = await synced('u6b', 'Update 6b');
    await publishBatchCancelled(publishDepsOf(h), { batchId: 'u6b', version: 2 });
    const run = watchedClient(h, 'u6b', { operation: 'editClass', at: 'afterEffect', when: (changes) => changes?.archived === true });
    const running = runOnce(h, 'u6b', run.client);
    await run.reached;
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'u6b', name: 'Update 6b reopened', version: 3 });
    run.resume();
    await running;
    const rest = await runToRest(h, 'u6b');
    expect(rest).toMatchObject({ state: 'synced', className: 'Update 6b reopened', cancelledAt: null, archivedAt: null });
    expect(remoteClass(row.classId)).toMatchObject({ name: 'Update 6b reopened', archived: false });
    const told = (await messagesOf(h, 'u6b')).filter((m) => m.type === 'batch.updated').map((m) => m.data.className);
    expect(told, 'class names told by batch.updated').toEqual(['Update 6b reopened']);
  });

  it('6c: an edit the remote refuses leaves a synced batch synced with the error recorded; a later update is queued and applied', async () => {
    const row = await synced('u6c', 'Update 6c');
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'bodyRejected' });
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'u6c', subject: 'Physics', version: 2 });
    await runOnce(h, 'u6c');
    // Soft: the corrective update below shows what a batch written off for a refused edit loses.
    expect
      .soft(await rowOf(h, 'u6c'), 'after the refused edit')
      .toMatchObject({ state: 'synced', classId: row.classId, lastErrorKind: expect.any(String), lastError: expect.any(String) });
    const corrective = await publishBatchUpdated(publishDepsOf(h), { batchId: 'u6c', subject: 'Chemistry', version: 3 });
    expect.soft(corrective.queued, 'the corrective update is queued').toBe(true);
    const rest = await runToRest(h, 'u6c');
    expect(rest).toMatchObject({ state: 'synced', classId: row.classId });
    expect(remoteClass(row.classId)?.subject, 'the corrective update reached the class').toBe('Chemistry');
  });
});
