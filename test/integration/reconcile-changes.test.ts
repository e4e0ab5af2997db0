// Reconciliation of batches that change after creation, against the sandbox: a synced class renamed
// on the remote (name_drift) and a cancelled batch's class that is visible again (cancelled_visible).
// Neither repair calls edit-class: each records the edit for the batch's own sync run (revision,
// next_class_name / archived_at), writes a `repair` line, and puts the batch in the operator lane.
import { asc } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { batchClasses, batchEvents } from '../../src/db/schema/index.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { readTimeline, requestClassEdit } from '../../src/mapping/index.ts';
import type { ReconcileOptions } from '../../src/reconcile/run.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { laneOfPriority } from '../../src/sync/lanes.ts';
import { type SyncWorker, createSyncWorker } from '../../src/sync/sync-worker.ts';
import { rowOf } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { reconcileOnce } from '../helpers/reconcile.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h, defer } = useHarness();
let worker: SyncWorker | undefined;
defer(() => worker?.close(5_000));

const db = () => h.runtime.database.db;
const sqlq = (text: string, values: unknown[] = []) => h.runtime.database.pool.query(text, values);
const inst = () => h.config.classroom.instituteId;

const reconcile = (options: Partial<ReconcileOptions> = {}) => reconcileOnce(h, options);

/** Publishes the batches and runs a worker until each is synced; stops it, so a job queued afterwards stays queued. */
async function syncAll(batchIds: string[]): Promise<void> {
  worker = createSyncWorker(h.runtime, { autoSweep: false });
  await publishBatches(
    publishDepsOf(h),
    batchIds.map((batchId) => ({ batchId, name: `Course ${batchId}`, subject: 'Maths' })),
  );
  await waitFor(
    async () => {
      for (const batchId of batchIds) if ((await rowOf(h, batchId, inst()))?.state !== 'synced') return false;
      return true;
    },
    `${batchIds.join(', ')} synced`,
  );
  await worker.close(5_000);
  worker = undefined;
}

const inSync = (report: { findings: { in_sync: { batchId: string | null }[] } }) => report.findings.in_sync.map((f) => f.batchId);
/** Runs a worker until the batch's queued change is applied (and its lease let go), then stops it. */
async function runUntilApplied(batchId: string): Promise<void> {
  worker = createSyncWorker(h.runtime, { autoSweep: false });
  await waitFor(async () => {
    const r = await row(batchId);
    return r.appliedRevision === r.revision && r.nextClassName === null && r.leaseOwner === null;
  }, `the change of ${batchId} applied`);
  await worker.close(5_000);
  worker = undefined;
}

const row = async (batchId: string) => (await rowOf(h, batchId, inst()))!;
const repairsOf = async (batchId: string) => ((await readTimeline(db(), { instituteId: inst(), batchId })) ?? []).filter((e) => e.type === 'repair');

/** Every mapping, every audit event and every job of both queues, as they are now. */
async function snapshot(): Promise<string> {
  const jobs = await Promise.all([h.runtime.queue, h.runtime.queue.background].map((q) => q.getJobCounts()));
  return JSON.stringify([
    await db().select().from(batchClasses).orderBy(asc(batchClasses.id)),
    await db().select().from(batchEvents).orderBy(asc(batchEvents.id)),
    jobs,
  ]);
}

/** The batch's job, if it is live, with the lane its priority places it in. */
async function liveJob(batchId: string) {
  const id = jobIdFor({ instituteId: inst(), batchId });
  for (const queue of [h.runtime.queue, h.runtime.queue.background]) {
    const job = await queue.getJob(id);
    const state = job ? await job.getState() : undefined;
    if (job && (state === 'waiting' || state === 'prioritized' || state === 'delayed')) {
      return { state, lane: laneOfPriority(job.opts.priority), dataLane: job.data.lane, background: queue === h.runtime.queue.background };
    }
  }
  return undefined;
}

describe('reconciliation: name_drift', () => {
  it('reports a class renamed on the remote; with RECONCILE_REPAIR_NAMES it requests the edit back and queues the batch', async () => {
    await syncAll(['nd-1', 'nd-2']);
    const before = await row('nd-1');
    h.sandbox.store.edit(before.classId!, { name: { kept: 'Renamed by hand', sent: 'Renamed by hand' } });

    // Default settings (RECONCILE_REPAIR_NAMES=false): reported, nothing changes.
    expect(h.config.sync.repairNames).toBe(false);
    const unchanged = await snapshot();
    const reported = await reconcile();
    expect(reported.ok).toBe(true);
    expect(reported.counts).toMatchObject({ name_drift: 1, in_sync: 1, hidden_remote: 0, orphan_remote: 0 });
    expect(reported.findings.name_drift).toMatchObject([
      { batchId: 'nd-1', classId: before.classId, className: 'Course nd-1', listedName: 'Renamed by hand', list: 'classes', matchedBy: 'id' },
    ]);
    expect(reported.repairs).toMatchObject({ editsRequested: 0, requeued: 0, skipped: 0 });
    expect(await snapshot()).toBe(unchanged);

    // A dry run with the repair on: reported, still nothing changes.
    const dry = await reconcile({ dryRun: true, repairNames: true });
    expect(dry.counts.name_drift).toBe(1);
    expect(await snapshot()).toBe(unchanged);

    // The repair on: the edit is recorded for the batch's own run, audited, and the batch queued in the operator lane.
    const repaired = await reconcile({ repairNames: true });
    expect(repaired.counts.name_drift).toBe(1);
    expect(repaired.repairs).toMatchObject({ editsRequested: 1, requeued: 1, skipped: 0 });
    const after = await row('nd-1');
    expect(after).toMatchObject({
      state: 'synced',
      className: 'Course nd-1',
      nextClassName: 'Course nd-1',
      revision: before.revision + 1,
      appliedRevision: before.appliedRevision,
      lane: 'operator',
      joinLink: before.joinLink,
    });
    const repairs = await repairsOf('nd-1');
    expect(repairs).toMatchObject([
      {
        fromState: 'synced',
        toState: 'synced',
        classId: before.classId,
        detail: { category: 'name_drift', action: 'request_edit', listedName: 'Renamed by hand', reconciliationRunId: repaired.runId },
      },
    ]);
    expect(JSON.stringify(repairs)).not.toContain(before.joinLink!);
    expect(await liveJob('nd-1')).toMatchObject({ lane: 'operator', dataLane: 'operator', background: true });
    // The pass itself sent no edit: the class still carries the hand-made name.
    expect(h.sandbox.store.get(before.classId!)!.name).toBe('Renamed by hand');
    // Untouched: the batch whose name was never changed.
    expect(await row('nd-2')).toMatchObject({ revision: 0, nextClassName: null });
    expect(await repairsOf('nd-2')).toEqual([]);

    // While the edit waits for its run, the batch is not drift, and nothing is requested twice.
    const again = await reconcile({ repairNames: true });
    expect(again.counts).toMatchObject({ name_drift: 0, in_sync: 2 });
    expect(again.repairs).toMatchObject({ editsRequested: 0, skipped: 0 });
    expect((await row('nd-1')).revision).toBe(before.revision + 1);

    // The batch's own run sends the class name back; the next pass finds it in sync.
    await runUntilApplied('nd-1');
    expect(await row('nd-1')).toMatchObject({ state: 'synced', className: 'Course nd-1', nextClassName: null, joinLink: before.joinLink });
    expect(h.sandbox.store.get(before.classId!)!.name).toBe('Course nd-1');
    const settled = await reconcile({ repairNames: true });
    expect(settled.counts).toMatchObject({ name_drift: 0, in_sync: 2 });
    expect(settled.repairs).toMatchObject({ editsRequested: 0 });
  });

  it('a request applies only to the row as the pass read it', async () => {
    await syncAll(['nd-3']);
    const r = await row('nd-3');
    const request = { rowId: r.id, classId: r.classId!, revision: r.revision, kind: 'rename' as const, listedName: 'X' };
    // Another revision, another class, a runner holding the row: nothing happens.
    expect(await requestClassEdit(db(), [{ ...request, revision: r.revision + 1 }], 0)).toEqual([]);
    expect(await requestClassEdit(db(), [{ ...request, classId: 'someone-else' }], 0)).toEqual([]);
    await sqlq(`update batch_classes set lease_owner = 'w-1', lease_expires_at = now() + interval '1 minute' where id = $1`, [r.id]);
    expect(await requestClassEdit(db(), [request], 0)).toEqual([]);
    await sqlq(`update batch_classes set lease_owner = null, lease_expires_at = null where id = $1`, [r.id]);
    // A name already waiting (an update from the integrator): it wins.
    await sqlq(`update batch_classes set next_class_name = 'From the integrator' where id = $1`, [r.id]);
    expect(await requestClassEdit(db(), [request], 0)).toEqual([]);
    await sqlq(`update batch_classes set next_class_name = null where id = $1`, [r.id]);
    // An archive request is for a cancelled batch only.
    expect(await requestClassEdit(db(), [{ rowId: r.id, classId: r.classId!, revision: r.revision, kind: 'archive' }], 0)).toEqual([]);
    expect(await repairsOf('nd-3')).toEqual([]);
    expect(await row('nd-3')).toMatchObject({ revision: r.revision, nextClassName: null });
    // As read: applied once; the same request again finds the revision moved on.
    expect(await requestClassEdit(db(), [request], 7)).toEqual([{ rowId: r.id, instituteId: inst(), batchId: 'nd-3' }]);
    expect(await requestClassEdit(db(), [request], 7)).toEqual([]);
    expect(await repairsOf('nd-3')).toHaveLength(1);
  });
});

describe('reconciliation: cancelled_visible', () => {
  /** The batch as a run leaves it once cancelled and archived (`archived_at` set); the class itself is visible. */
  async function cancelledButVisible(batchId: string): Promise<void> {
    await sqlq(
      `update batch_classes set state = 'cancelled', cancelled_at = now(), archived_at = now() - interval '1 minute', revision = 1, applied_revision = 1
        where institute_id = $1 and batch_id = $2`,
      [inst(), batchId],
    );
  }

  it('reports a cancelled batch whose class is visible; with CLASSROOM_ARCHIVE_ON_CANCEL it requests archiving again', async () => {
    await syncAll(['cv-1', 'cv-2']);
    await cancelledButVisible('cv-1');
    await cancelledButVisible('cv-2');
    h.sandbox.store.hide((await row('cv-2')).classId!);
    const before = await row('cv-1');

    // CLASSROOM_ARCHIVE_ON_CANCEL=false: reported only. The archived one is as it should be.
    const unchanged = await snapshot();
    const reported = await reconcile({ archiveOnCancel: false });
    expect(reported.counts).toMatchObject({ cancelled_visible: 1, hidden_remote: 0 });
    expect(inSync(reported)).toEqual(expect.arrayContaining(['cv-2']));
    expect(reported.findings.cancelled_visible).toMatchObject([{ batchId: 'cv-1', classId: before.classId, state: 'cancelled', list: 'classes' }]);
    expect(reported.repairs).toMatchObject({ editsRequested: 0, requeued: 0 });
    const dry = await reconcile({ dryRun: true });
    expect(dry.counts.cancelled_visible).toBe(1);
    expect(await snapshot()).toBe(unchanged);

    // The default (true): archiving again is requested and the batch queued in the operator lane.
    expect(h.config.sync.archiveOnCancel).toBe(true);
    const repaired = await reconcile();
    expect(repaired.counts.cancelled_visible).toBe(1);
    expect(repaired.repairs).toMatchObject({ editsRequested: 1, requeued: 1, skipped: 0 });
    expect(await row('cv-1')).toMatchObject({ state: 'cancelled', revision: 2, appliedRevision: 1, archivedAt: null, nextClassName: null, lane: 'operator' });
    expect(await repairsOf('cv-1')).toMatchObject([
      {
        fromState: 'cancelled',
        toState: 'cancelled',
        classId: before.classId,
        detail: { category: 'cancelled_visible', action: 'request_edit', reconciliationRunId: repaired.runId },
      },
    ]);
    expect(await liveJob('cv-1')).toMatchObject({ lane: 'operator', background: true });
    expect(await liveJob('cv-2')).toBeUndefined();
    expect(h.sandbox.store.get(before.classId!)!.archived).toBe(false);

    // The archive now waits for its run: not reported again.
    const again = await reconcile();
    expect(again.counts).toMatchObject({ cancelled_visible: 0, hidden_remote: 0 });
    expect(inSync(again)).toEqual(expect.arrayContaining(['cv-1', 'cv-2']));

    // The batch's own run archives the class again; the next pass finds it in sync.
    await runUntilApplied('cv-1');
    expect((await row('cv-1')).archivedAt).toBeInstanceOf(Date);
    expect(await row('cv-1')).toMatchObject({ state: 'cancelled', revision: 2, appliedRevision: 2 });
    expect(h.sandbox.store.get(before.classId!)!.archived).toBe(true);
    const settled = await reconcile();
    expect(settled.counts).toMatchObject({ cancelled_visible: 0, hidden_remote: 0 });
    expect(inSync(settled)).toEqual(expect.arrayContaining(['cv-1', 'cv-2']));
  });
});
