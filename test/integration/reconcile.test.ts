// Reconciliation end to end: each category made on purpose through the sandbox's in-process store or
// straight in Postgres, then detected, counted, and repaired or reported as promised.
import { asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { readTimeline } from '../../src/mapping/index.ts';
import { SANDBOX_DEFAULTS } from '../../src/config/config.ts';
import { batchClasses, batchEvents, reconciliationRuns } from '../../src/db/schema/index.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { type ReconcileOptions, runReconciliation } from '../../src/reconcile/run.ts';
import { reconcileOptionsOf } from '../../src/reconcile/settings.ts';
import { reconcileDepsOf } from '../../src/reconcile/setup.ts';
import { type Category, emptyCounts } from '../../src/reconcile/types.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { type SyncWorker, createSyncWorker } from '../../src/sync/sync-worker.ts';
import { rowOf, untilSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';

const SECOND_INSTITUTE = 'institute-two';
const { h, defer } = useHarness({ sandbox: { instituteIds: [SANDBOX_DEFAULTS.CLASSROOM_INSTITUTE_ID, SECOND_INSTITUTE] } });
/** Started and stopped by the tests; whatever is still running at the end is closed at teardown. */
let worker: SyncWorker | undefined;
defer(() => worker?.close(5_000));

const db = () => h.runtime.database.db;
const sqlq = (text: string, values: unknown[] = []) => h.runtime.database.pool.query(text, values);
const inst = () => h.config.classroom.instituteId;

/** One pass over the default institute (or `options.instituteIds`; `allInstitutes` for the real default). */
function reconcile(options: Partial<ReconcileOptions> = {}, allInstitutes = false) {
  const scope = allInstitutes ? {} : { instituteIds: [inst()] };
  return runReconciliation(reconcileDepsOf(h.runtime), {
    trigger: 'test',
    ...reconcileOptionsOf(h.config),
    stuckAfterMs: 60_000,
    graceMs: 0,
    linkChecks: 1_000,
    ...scope,
    ...options,
  });
}

async function syncAll(events: { batchId: string; name: string; subject: string; instituteId?: string }[]) {
  worker ??= createSyncWorker(h.runtime, { autoSweep: false });
  await publishBatches(publishDepsOf(h), events);
  await waitFor(async () => {
    for (const e of events) if ((await rowOf(h, e.batchId, e.instituteId ?? inst()))?.state !== 'synced') return false;
    return true;
  }, `${events.length} batches synced`);
}

async function stopWorker() {
  await worker?.close(5_000);
  worker = undefined;
}

/** A batch recorded (or put) in a non-terminal state, with no job anywhere, untouched for an hour. */
async function makeStuck(batchId: string, state?: string, instituteId = inst()) {
  await h.runtime.queue.remove(jobIdFor({ instituteId, batchId }));
  await sqlq(
    `update batch_classes set state = coalesce($3::batch_state, state), updated_at = now() - interval '1 hour' where institute_id = $1 and batch_id = $2`,
    [instituteId, batchId, state ?? null],
  );
}

async function insertNeedsReview(batchId: string, className: string, instituteId = inst()) {
  await sqlq(
    `insert into batch_classes (institute_id, batch_id, class_name, event, state, review, last_error, last_error_kind, create_sent_at)
     values ($1, $2, $3, $4, 'needs_review', $5, 'ambiguous', 'ambiguous_create', now() - interval '1 hour')`,
    [instituteId, batchId, className, { batchId, name: className, subject: 'Review' }, { reason: 'test: ambiguous create' }],
  );
}

/** Every mapping and every audit event, as they are stored. */
const snapshot = async () =>
  JSON.stringify([await db().select().from(batchClasses).orderBy(asc(batchClasses.id)), await db().select().from(batchEvents).orderBy(asc(batchEvents.id))]);
const ids = (list: { batchId: string | null }[]) => list.map((f) => f.batchId).sort();

describe('reconciliation', () => {
  it('detects every category, changes nothing on --dry-run, repairs only what is safe, and a second pass agrees', async () => {
    const courses = Array.from({ length: 10 }, (_, i) => ({ batchId: `r-${i}`, name: `Course ${i}`, subject: 'Maths' }));
    await syncAll(courses);
    await stopWorker();
    const classOf = async (batchId: string) => (await rowOf(h, batchId, inst()))!.classId!;

    // missing_remote, hidden_remote, orphan_remote, link_missing (local and remote), duplicate_suspect
    h.sandbox.store.delete(await classOf('r-0'));
    h.sandbox.store.hide(await classOf('r-1'));
    const handMade = h.sandbox.store.create({ name: 'Hand Made', subject: 'Art', instituteId: inst() });
    await sqlq(`update batch_classes set join_link = null where batch_id = 'r-2'`);
    h.sandbox.store.blankLink(await classOf('r-3'));
    const sameName = h.sandbox.store.create({ name: 'Course 4', subject: 'Maths', instituteId: inst() });
    // stuck: one recorded but its job lost; one killed mid-flight after edit-class (job gone, lease expired)
    await publishBatches(publishDepsOf(h), [{ batchId: 's-1', name: 'Stuck One', subject: 'Art' }]);
    await makeStuck('s-1');
    await makeStuck('r-5', 'link_enabled');
    // needs_review: one now has exactly one candidate (adopted); one has two (only reported)
    const ambiguous = h.sandbox.store.create({ name: 'Ambiguous', subject: 'Review', instituteId: inst() });
    await insertNeedsReview('nr-1', 'Ambiguous');
    h.sandbox.store.create({ name: 'Twice', subject: 'Review', instituteId: inst() });
    h.sandbox.store.create({ name: 'Twice', subject: 'Review', instituteId: inst() });
    await insertNeedsReview('nr-2', 'Twice');

    const expected: Record<Category, number> = {
      in_sync: 4,
      missing_remote: 1,
      hidden_remote: 1,
      orphan_remote: 1,
      stuck: 2,
      link_missing: 2,
      duplicate_suspect: 2,
      needs_review_resolved: 1,
      name_drift: 0,
      cancelled_visible: 0,
    };

    // --dry-run: everything detected, nothing changed (rows, jobs, remote classes).
    const rowsBefore = await snapshot();
    const jobsBefore = await h.runtime.queue.getJobCounts();
    const classesBefore = h.sandbox.store.size;
    const dry = await reconcile({ dryRun: true });
    expect(dry.ok).toBe(true);
    expect(dry.counts).toEqual(expected);
    expect(await snapshot()).toBe(rowsBefore);
    expect(await h.runtime.queue.getJobCounts()).toEqual(jobsBefore);
    expect(h.sandbox.store.size).toBe(classesBefore);
    expect(dry.repairs).toEqual({ requeued: 0, linkStepsReset: 0, adopted: 0, editsRequested: 0, skipped: 0 });

    // Each finding names its batch and class.
    expect(dry.findings.missing_remote).toMatchObject([{ batchId: 'r-0', classId: await classOf('r-0'), matchedBy: null }]);
    expect(dry.findings.hidden_remote).toMatchObject([{ batchId: 'r-1', classId: await classOf('r-1'), list: 'hiddenClasses' }]);
    expect(dry.findings.orphan_remote).toMatchObject([{ batchId: null, classId: handMade._id, className: 'Hand Made' }]);
    expect(ids(dry.findings.stuck)).toEqual(['r-5', 's-1']);
    expect(ids(dry.findings.link_missing)).toEqual(['r-2', 'r-3']);
    expect(dry.findings.link_missing.find((f) => f.batchId === 'r-2')?.detail).toMatch(/no join link is stored/);
    expect(dry.findings.link_missing.find((f) => f.batchId === 'r-3')?.detail).toMatch(/remote join link is blank/);
    expect(ids(dry.findings.duplicate_suspect)).toEqual(['nr-2', 'r-4']);
    expect(dry.findings.duplicate_suspect.find((f) => f.batchId === 'r-4')?.candidates).toEqual([await classOf('r-4'), sameName._id]);
    expect(dry.findings.needs_review_resolved).toMatchObject([{ batchId: 'nr-1', classId: ambiguous._id }]);
    const [dryRow] = await db().select().from(reconciliationRuns).where(eq(reconciliationRuns.id, dry.runId!));
    expect(dryRow).toMatchObject({ trigger: 'test', dryRun: true, counts: expected, error: null, repairs: {} });
    expect(dryRow!.finishedAt!.getTime()).toBeGreaterThanOrEqual(dryRow!.startedAt.getTime());

    // A real pass: same findings; stuck re-enqueued, link steps reset, nr-1 adopted.
    const real = await reconcile();
    expect(real.counts).toEqual(expected);
    expect(real.repairs).toEqual({ requeued: 5, linkStepsReset: 2, adopted: 1, editsRequested: 0, skipped: 0 });
    expect(await rowOf(h, 'nr-1', inst())).toMatchObject({ state: 'created', classId: ambiguous._id, review: null });
    expect(await rowOf(h, 'r-2', inst())).toMatchObject({ state: 'created', joinLink: null });
    expect(await rowOf(h, 'nr-2', inst())).toMatchObject({ state: 'needs_review', classId: null });
    // Each repair is in the batch's audit trail, written by the statement that made it.
    const repairsOf = async (batchId: string) =>
      ((await readTimeline(db(), { instituteId: inst(), batchId: batchId })) ?? []).filter((e) => e.type === 'repair');
    expect(await repairsOf('r-2')).toMatchObject([
      { fromState: 'synced', toState: 'created', detail: { category: 'link_missing', action: 'rerun_link_steps', reconciliationRunId: real.runId } },
    ]);
    expect(await repairsOf('nr-1')).toMatchObject([
      {
        fromState: 'needs_review',
        toState: 'created',
        classId: ambiguous._id,
        detail: { category: 'needs_review_resolved', previousReview: { reason: 'test: ambiguous create' } },
      },
    ]);
    expect(await repairsOf('s-1')).toMatchObject([{ detail: { category: 'stuck', action: 'requeue' } }]);
    expect(await repairsOf('r-0')).toEqual([]);
    const [realRow] = await db().select().from(reconciliationRuns).where(eq(reconciliationRuns.id, real.runId!));
    expect(realRow!.repairs).toMatchObject({ requeued: 5, adopted: 1, adoptions: [{ batchId: 'nr-1', classId: ambiguous._id }] });

    // The sync machine finishes what the repairs handed back, without a single new class.
    const classesBeforeSync = h.sandbox.store.size;
    worker = createSyncWorker(h.runtime, { autoSweep: false });
    for (const batchId of ['s-1', 'r-5', 'r-2', 'r-3', 'nr-1']) {
      await untilSynced(h, batchId, { instituteId: inst() });
    }
    expect(h.sandbox.store.size).toBe(classesBeforeSync + 1); // s-1 had never been created: its one class
    expect(h.sandbox.state().byName).toMatchObject({ 'Stuck One': 1, Ambiguous: 1, 'Course 3': 1 });
    const r3 = (await rowOf(h, 'r-3', inst()))!;
    expect(r3.joinLink).toBe(h.sandbox.store.get(r3.classId!)!.joinMagicLink);
    expect(r3.joinLink).not.toBe('');

    // Second pass: every repaired batch is in_sync; what was only reported is still reported.
    const second = await reconcile();
    expect(second.counts).toEqual({ ...expected, in_sync: 9, stuck: 0, link_missing: 0, needs_review_resolved: 0 });
    expect(second.repairs).toEqual({ requeued: 0, linkStepsReset: 0, adopted: 0, editsRequested: 0, skipped: 0 });
    await stopWorker();
  });

  it('after repairs, a second pass right away finds everything in_sync', async () => {
    const institute = SECOND_INSTITUTE;
    const events = Array.from({ length: 6 }, (_, i) => ({ batchId: `t-${i}`, name: `Term ${i}`, subject: 'Art', instituteId: institute }));
    await syncAll(events);
    await stopWorker();
    await makeStuck('t-0', 'created', institute);
    await sqlq(`update batch_classes set join_link = '' where institute_id = $1 and batch_id = 't-1'`, [institute]);
    h.sandbox.store.blankLink((await rowOf(h, 't-2', institute))!.classId!);
    h.sandbox.store.create({ name: 'Term review', subject: 'Art', instituteId: institute });
    await insertNeedsReview('t-review', 'Term review', institute);

    const only = { instituteIds: [institute] };
    const first = await reconcile(only);
    expect(first.counts).toMatchObject({ stuck: 1, link_missing: 2, needs_review_resolved: 1, in_sync: 3, orphan_remote: 0 });

    // Right after the repairs (before any worker ran) nothing is drift any more: the rows are back
    // in the machine's hands with a live job each.
    const right = await reconcile(only);
    expect(right.counts).toEqual({ ...zero(), in_sync: 7 });

    worker = createSyncWorker(h.runtime, { autoSweep: false });
    for (const batchId of ['t-0', 't-1', 't-2', 't-review']) {
      await untilSynced(h, batchId, { instituteId: institute });
    }
    const after = await reconcile(only);
    expect(after.counts).toEqual({ ...zero(), in_sync: 7 });
    expect(after.ok).toBe(true);
    await stopWorker();
  });

  it('a listing without _id: presence by name, reported honestly, nothing adopted on a name alone', async () => {
    const institute = SECOND_INSTITUTE;
    h.sandbox.store.create({ name: 'Nameless', subject: 'Art', instituteId: institute });
    await insertNeedsReview('by-name-only', 'Nameless', institute);
    h.sandbox.store.delete((await rowOf(h, 't-3', institute))!.classId!);
    h.sandbox.faults.set({ listingIncludesIds: false });
    try {
      const report = await reconcile({ instituteIds: [institute], linkChecks: 0 });
      expect(report.counts).toEqual({ ...zero(), in_sync: 6, missing_remote: 1 });
      expect(report.findings.in_sync.every((f) => f.matchedBy === 'name')).toBe(true);
      expect(report.findings.missing_remote).toMatchObject([{ batchId: 't-3' }]);
      expect(report.unresolved).toMatchObject([{ batchId: 'by-name-only', detail: expect.stringMatching(/no _id to adopt/) }]);
      expect(report.notes.join('\n')).toMatch(/carry no _id/);
      expect((await rowOf(h, 'by-name-only', institute))!.state).toBe('needs_review');
    } finally {
      h.sandbox.faults.clear();
    }
    // With ids back, the same batch has one safe candidate and is adopted.
    const withIds = await reconcile({ instituteIds: [institute], dryRun: true });
    expect(withIds.findings.needs_review_resolved).toMatchObject([{ batchId: 'by-name-only' }]);
  });

  it('an institute whose listing fails is recorded as an error; the others are still reconciled', async () => {
    const report = await reconcile({ instituteIds: [inst(), 'no-such-institute'], dryRun: true });
    expect(report.ok).toBe(false);
    expect(report.errors).toEqual([expect.stringMatching(/institute no-such-institute: .*404/)]);
    expect(report.counts.in_sync).toBeGreaterThan(0);
    const [row] = await db().select().from(reconciliationRuns).where(eq(reconciliationRuns.id, report.runId!));
    expect(row!.error).toMatch(/no-such-institute/);
    expect(row!.finishedAt).toBeInstanceOf(Date);
  });

  it('reconciles every institute with batches plus the default one, and hands each report to onRun', async () => {
    const seen: number[] = [];
    const report = await reconcile({ dryRun: true, onRun: (r) => seen.push(r.runId!) }, true);
    expect(report.institutes.map((i) => i.instituteId).sort()).toEqual([inst(), SECOND_INSTITUTE].sort());
    expect(seen).toEqual([report.runId]);
  });
});

function zero(): Record<Category, number> {
  return emptyCounts();
}
