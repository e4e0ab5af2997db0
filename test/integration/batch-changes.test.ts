// Batches change after creation: updates reach the class, cancellations stop or archive it, stale
// versions are ignored. Real Postgres, Redis and the sandbox over HTTP.
import { describe, expect, it } from 'vitest';
import * as mapping from '../../src/mapping/index.ts';
import { publishBatchCreated, publishBatches } from '../../src/intake/publish.ts';
import { InvalidEventError } from '../../src/intake/schema.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { rowOf, untilSynced } from '../helpers/batches.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness, useHarnessWithWorker } from '../helpers/use-harness.ts';

const classOf = (h: Harness, classId: string | null) => h.sandbox.state().classes?.find((c) => c.id === classId);
const timeline = async (h: Harness, batchId: string) =>
  (await mapping.readTimeline(h.runtime.database.db, { instituteId: h.config.classroom.instituteId, batchId })) ?? [];
const editCalls = (h: Harness) => h.sandbox.state().calls.byOperation.editClass?.calls ?? 0;

describe('changes of a batch with a class (worker running)', () => {
  const { h } = useHarnessWithWorker();

  it('an update renames the class with one edit-class; the batch keeps its class id and join link and stays synced', async () => {
    const deps = publishDepsOf(h);
    await publishBatchCreated(deps, { batchId: 'u-1', name: 'Algebra', subject: 'Maths', room: 'A1' });
    const synced = await untilSynced(h, 'u-1');
    const edits = editCalls(h);
    const accepted = await publishBatchCreated(deps, { type: 'batch.updated', batchId: 'u-1', name: 'Algebra II', room: 'B2', version: 2 });
    expect(accepted).toMatchObject({ type: 'batch.updated', outcome: 'applied', state: 'synced', queued: true });
    // The dashboard lists the change's own job by lane, institute, batch and change.
    const job = await h.runtime.queue.getJob(`${jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'u-1' })}-r1`);
    expect(job?.name).toBe(`live · ${h.config.classroom.instituteId} · u-1 · update r1`);
    const row = await waitFor(async () => {
      const r = await rowOf(h, 'u-1');
      return r && r.appliedRevision === r.revision && r.className === 'Algebra II' ? r : undefined;
    }, 'the rename applied');
    expect(row).toMatchObject({
      state: 'synced',
      classId: synced.classId,
      joinLink: synced.joinLink,
      nextClassName: null,
      remoteName: 'Algebra II',
      version: 2,
    });
    const remote = classOf(h, synced.classId);
    expect(remote).toMatchObject({ name: 'Algebra II', subject: 'Maths', archived: false });
    expect(editCalls(h)).toBe(edits + 1);
    expect(h.sandbox.state().byName.Algebra).toBeUndefined();
    const types = (await timeline(h, 'u-1')).map((e) => e.type);
    expect(types).toContain('updated');
    expect(types).toContain('class_edited');
  });

  it('a cancel archives the class (listed under hiddenClasses); a later update with a higher version reopens and unarchives it', async () => {
    const deps = publishDepsOf(h);
    await publishBatchCreated(deps, { batchId: 'c-1', name: 'Doomed', subject: 'Art', version: 1 });
    const synced = await untilSynced(h, 'c-1');
    const cancelled = await publishBatchCreated(deps, { type: 'batch.cancelled', batchId: 'c-1', version: 2 });
    expect(cancelled).toMatchObject({ type: 'batch.cancelled', outcome: 'applied' });
    const row = await waitFor(async () => ((await rowOf(h, 'c-1'))?.state === 'cancelled' ? rowOf(h, 'c-1') : undefined), 'cancelled');
    expect(row?.archivedAt).toBeInstanceOf(Date);
    expect(classOf(h, synced.classId)?.archived).toBe(true);
    const listing = await h.runtime.remotes.default.classroom.listClasses(h.config.classroom.instituteId);
    expect(listing.hiddenClasses.map((c) => c._id)).toContain(synced.classId);

    // Stale: version 2 again changes nothing and says so.
    const stale = await publishBatchCreated(deps, { type: 'batch.updated', batchId: 'c-1', name: 'Revived?', version: 2 });
    expect(stale).toMatchObject({ outcome: 'stale', state: 'cancelled', queued: false });
    expect((await timeline(h, 'c-1')).map((e) => e.type)).toContain('stale');

    const reopened = await publishBatchCreated(deps, { type: 'batch.updated', batchId: 'c-1', name: 'Revived', version: 3 });
    expect(reopened).toMatchObject({ outcome: 'applied', queued: true });
    const back = await waitFor(async () => {
      const r = await rowOf(h, 'c-1');
      return r?.state === 'synced' && r.className === 'Revived' ? r : undefined;
    }, 'reopened and synced');
    expect(back).toMatchObject({ classId: synced.classId, cancelledAt: null, archivedAt: null });
    expect(classOf(h, synced.classId)).toMatchObject({ name: 'Revived', archived: false });
    expect(h.sandbox.state().bySentName.Doomed ?? 0).toBeLessThanOrEqual(1);
    expect(h.sandbox.state().classes?.filter((c) => c.name === 'Revived' || c.name === 'Doomed')).toHaveLength(1);
  });

  it('refuses an update for a batch never created, and an update that changes nothing, naming the field', async () => {
    const deps = publishDepsOf(h);
    const [unknown, empty] = await publishBatches(deps, [
      { type: 'batch.updated', batchId: 'never', name: 'Ghost' },
      { type: 'batch.updated', batchId: 'u-1' },
    ]);
    expect(unknown).toMatchObject({ ok: false, problems: [{ field: 'batchId', reason: expect.stringContaining('batch.created first') }] });
    expect(empty).toMatchObject({ ok: false, problems: [{ field: '(event)', reason: expect.stringContaining('must change name, subject') }] });
    await expect(publishBatchCreated(deps, { type: 'batch.cancelled', batchId: 'never-2' })).rejects.toBeInstanceOf(InvalidEventError);
    await expect(publishBatchCreated(deps, { batchId: 'v-1', name: 'V', subject: 'S', version: 0 })).rejects.toThrow(/version must be a positive integer/);
    await expect(publishBatchCreated(deps, { batchId: 'v-1', name: 'V', subject: 'S', type: 'batch.renamed' })).rejects.toThrow(/type must be one of/);
    expect(await rowOf(h, 'never')).toBeUndefined();
    expect(await rowOf(h, 'v-1')).toBeUndefined();
  });
});

describe('changes before add-class is sent (no worker until the changes are in)', () => {
  const { h, syncWorker } = useHarness();

  it('the create carries the newest values: one add-class, no edit; a batch cancelled first never gets a class', async () => {
    const deps = publishDepsOf(h);
    const outcomes = await publishBatches(deps, [
      { batchId: 'p-1', name: 'First Name', subject: 'History' },
      { type: 'batch.updated', batchId: 'p-1', name: 'Second Name', subject: 'Geography' },
      { batchId: 'p-2', name: 'Never Made', subject: 'History' },
      { type: 'batch.cancelled', batchId: 'p-2' },
    ]);
    expect(outcomes.map((o) => o.ok && o.outcome)).toEqual(['recorded', 'applied', 'recorded', 'applied']);
    expect(outcomes[3]).toMatchObject({ state: 'cancelled', queued: false });
    syncWorker(h.runtime);
    const synced = await untilSynced(h, 'p-1');
    expect(synced.className).toBe('Second Name');
    expect(classOf(h, synced.classId)).toMatchObject({ name: 'Second Name', subject: 'Geography' });
    expect(h.sandbox.state().calls.byOperation.addClass?.calls).toBe(1);
    expect(editCalls(h)).toBe(1); // the join link's only
    expect(h.sandbox.state().bySentName['Never Made']).toBeUndefined();
    expect(await rowOf(h, 'p-2')).toMatchObject({ state: 'cancelled', classId: null });

    // Cancelled before it had a class, then created again with a higher version: it syncs as new.
    const reopened = await publishBatchCreated(deps, { batchId: 'p-2', name: 'Made After All', subject: 'History', version: 3 });
    expect(reopened).toMatchObject({ outcome: 'applied', duplicate: true, queued: true });
    const back = await untilSynced(h, 'p-2');
    expect(back).toMatchObject({ className: 'Made After All', cancelledAt: null, version: 3 });
    expect(h.sandbox.state().bySentName['Never Made']).toBeUndefined();
  });
});

describe('changes while an add-class is in doubt (its answer never comes)', () => {
  const { h } = useHarnessWithWorker();

  /** Publishes a batch whose add-class takes effect but never answers; resolves once the batch is `creating`. */
  async function inDoubt(batchId: string, name: string) {
    h.sandbox.faults.set({ ...h.sandbox.faults.config, hangMs: 60_000 });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'hang' });
    await publishBatchCreated(publishDepsOf(h), { batchId, name, subject: 'Music', version: 1 });
    await waitFor(async () => (await rowOf(h, batchId))?.state === 'creating' || undefined, `${batchId} creating`);
  }

  it('an update while the outcome is unknown: settled by the sent name (the class is adopted, never made twice), then renamed', async () => {
    await inDoubt('d-1', 'Sent Name');
    const update = await publishBatchCreated(publishDepsOf(h), { type: 'batch.updated', batchId: 'd-1', name: 'Newer Name', version: 2 });
    expect(update).toMatchObject({ outcome: 'applied', state: 'creating' });
    const row = await waitFor(async () => {
      const r = await rowOf(h, 'd-1');
      return r?.state === 'synced' && r.className === 'Newer Name' && r.revision === r.appliedRevision ? r : undefined;
    }, 'adopted, renamed and synced');
    const ours = h.sandbox.state().classes?.filter((c) => c.name === 'Sent Name' || c.name === 'Newer Name') ?? [];
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({ id: row.classId, name: 'Newer Name' });
    expect(h.sandbox.state().calls.byOperation.addClass?.calls).toBe(1);
    const trail = await timeline(h, 'd-1');
    expect(trail.some((e) => e.detail?.resolution === 'adopt')).toBe(true);
    expect(trail.map((e) => e.type)).toContain('class_edited');
  });

  it('a cancel while the add-class is in flight: settled first (one class), then that class is archived', async () => {
    await inDoubt('d-2', 'Cancelled In Flight');
    const cancel = await publishBatchCreated(publishDepsOf(h), { type: 'batch.cancelled', batchId: 'd-2', version: 2 });
    expect(cancel).toMatchObject({ outcome: 'applied', state: 'creating' });
    const row = await waitFor(async () => ((await rowOf(h, 'd-2'))?.state === 'cancelled' ? rowOf(h, 'd-2') : undefined), 'cancelled');
    const ours = h.sandbox.state().classes?.filter((c) => c.sentName === 'Cancelled In Flight') ?? [];
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({ id: row?.classId, archived: true });
  });
});

describe('a reopening while the archive is in doubt', () => {
  const { h } = useHarnessWithWorker({ env: { CLASSROOM_TIMEOUT: '3s' } });

  it('the class is unarchived even though no answer said it was archived', async () => {
    const deps = publishDepsOf(h);
    await publishBatchCreated(deps, { batchId: 'r-1', name: 'Archive Race', subject: 'Art', version: 1 });
    const synced = await untilSynced(h, 'r-1');
    h.sandbox.faults.set({ ...h.sandbox.faults.config, hangMs: 60_000 });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'hang' });
    await publishBatchCreated(deps, { type: 'batch.cancelled', batchId: 'r-1', version: 2 });
    await waitFor(() => classOf(h, synced.classId)?.archived === true || undefined, 'the archive reached the remote');
    await publishBatchCreated(deps, { type: 'batch.updated', batchId: 'r-1', name: 'Archive Race II', version: 3 });
    await waitFor(
      async () => {
        const r = await rowOf(h, 'r-1');
        return r?.state === 'synced' && r.revision === r.appliedRevision && r.className === 'Archive Race II' ? r : undefined;
      },
      'reopened and synced',
      45_000,
    );
    expect(classOf(h, synced.classId)).toMatchObject({ sentName: 'Archive Race II', archived: false });
  });
});

describe('an update while an answered add-class is on its way', () => {
  const { h } = useHarnessWithWorker({ env: { CLASSROOM_TIMEOUT: '5s' } });

  it('the same run edits the class with every changed field (subject and extra fields as well as the name)', async () => {
    h.sandbox.faults.set({ ...h.sandbox.faults.config, latencyMs: 600 });
    await publishBatchCreated(publishDepsOf(h), { batchId: 'f-1', name: 'Slow Answer', subject: 'Physics', version: 1 });
    await waitFor(async () => (await rowOf(h, 'f-1'))?.state === 'creating' || undefined, 'creating');
    await publishBatchCreated(publishDepsOf(h), { type: 'batch.updated', batchId: 'f-1', name: 'Quick Change', subject: 'Biology', room: 'R2', version: 2 });
    const row = await waitFor(async () => {
      const r = await rowOf(h, 'f-1');
      return r?.state === 'synced' && r.revision === r.appliedRevision ? r : undefined;
    }, 'synced with the change applied');
    h.sandbox.faults.set({ ...h.sandbox.faults.config, latencyMs: 0 });
    expect(classOf(h, row.classId)).toMatchObject({ name: 'Quick Change', subject: 'Biology' });
    const full = await h.runtime.remotes.default.classroom.getClass(row.classId!);
    expect(full).toMatchObject({ room: 'R2' });
    expect(h.sandbox.state().calls.byOperation.addClass?.calls).toBe(1);
  });
});

describe('CLASSROOM_ARCHIVE_ON_CANCEL=false', () => {
  const { h } = useHarnessWithWorker({ env: { CLASSROOM_ARCHIVE_ON_CANCEL: 'false' } });

  it('a cancelled batch leaves its class visible and still ends cancelled', async () => {
    const deps = publishDepsOf(h);
    await publishBatchCreated(deps, { batchId: 'k-1', name: 'Kept Visible', subject: 'Art' });
    const synced = await untilSynced(h, 'k-1');
    const edits = editCalls(h);
    await publishBatchCreated(deps, { type: 'batch.cancelled', batchId: 'k-1' });
    const row = await waitFor(async () => ((await rowOf(h, 'k-1'))?.state === 'cancelled' ? rowOf(h, 'k-1') : undefined), 'cancelled');
    expect(row).toMatchObject({ classId: synced.classId, archivedAt: null });
    expect(classOf(h, synced.classId)?.archived).toBe(false);
    expect(editCalls(h)).toBe(edits);
  });
});
