// One institute the remote refuses must not jam reconciliation (issue 14, item 3). Two institutes:
// the sandbox's own, and one it does not know (403 on add-class, 404 on the listing). A worker process
// syncs and runs reconciliation passes from its queue, as in production; its /metrics is what the
// ClassroomSyncReconcileNotSucceeding alert reads. The operator's side goes through the real CLI.
import { Queue } from 'bullmq';
import { beforeAll, describe, expect, it } from 'vitest';
import { readTimeline } from '../../src/mapping/index.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import type { ReconcileReport } from '../../src/reconcile/types.ts';
import { RECONCILE_QUEUE } from '../../src/reconcile/scheduler.ts';
import { abandonBatches, undoAbandon } from '../../src/sync/abandon-batches.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { killAllChildren, runCli } from '../helpers/cli.ts';
import { rowOf, untilSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, call, useTestWorker } from './http-helpers.ts';

const REFUSED = 'institute-closed';
// The sandbox knows CLASSROOM_INSTITUTE_ID only. A refused batch fails after its attempts; three
// show that as well as ten, and sooner.
const harness = useHarness({ env: { SYNC_ATTEMPTS: '3' } });
const { h } = harness;
harness.defer(killAllChildren);
const worker = useTestWorker(harness);
let passes: Queue;

beforeAll(() => {
  const queue = new Queue(RECONCILE_QUEUE, { connection: h.runtime.redis, prefix: h.config.queuePrefix });
  passes = queue;
  harness.defer(() => queue.close());
});

const inst = () => h.config.classroom.instituteId;
const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { env: { ...h.env, ...env } });
const stateOf = async (batchId: string, instituteId = inst()) => (await rowOf(h, batchId, instituteId))?.state;

/** One scheduled-style pass, run by the worker's reconciler; resolves with the job's end state. */
async function scheduledPass(): Promise<'completed' | 'failed'> {
  const job = await passes.add('reconcile', {}, { attempts: 1 });
  return waitFor(async () => {
    const state = await job.getState();
    return state === 'completed' || state === 'failed' ? state : undefined;
  }, 'the reconciliation pass to finish');
}

/** A sample of the worker's /metrics, scraped over HTTP as Prometheus does. */
async function metric(name: string, labels = ''): Promise<number | undefined> {
  const { text } = await call(`${worker.url}/metrics`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe('an institute the remote refuses', () => {
  it('fails its own batches at sync, as it should', async () => {
    await publishBatches(publishDepsOf(h), [
      { batchId: 'ok-1', name: 'Open One', subject: 'Maths' },
      { batchId: 'ok-2', name: 'Open Two', subject: 'Maths' },
      { batchId: 'gone-1', name: 'Closed One', subject: 'Art', instituteId: REFUSED },
      { batchId: 'gone-2', name: 'Closed Two', subject: 'Art', instituteId: REFUSED },
    ]);
    for (const id of ['ok-1', 'ok-2']) await untilSynced(h, id, { instituteId: inst() });
    for (const id of ['gone-1', 'gone-2']) await waitFor(async () => (await stateOf(id, REFUSED)) === 'failed', `${id} failed`);
  });

  it('does not stop the other institute being repaired, and the report names it and why, everywhere', async () => {
    // Drift in the institute that works: a synced batch that lost its join link (link_missing).
    await h.runtime.database.pool.query(`update batch_classes set join_link = null where batch_id = 'ok-1'`);

    const { code, stdout, stderr } = await cli(['reconcile', '--json'], { LOG_LEVEL: 'warn' });
    expect(code, stderr).toBe(1);
    const report = JSON.parse(stdout) as ReconcileReport;
    expect(report.ok).toBe(false);
    // The other institute was reconciled and repaired...
    expect(report.counts.link_missing).toBe(1);
    expect(report.findings.link_missing).toMatchObject([{ batchId: 'ok-1', instituteId: inst() }]);
    expect(report.repairs).toMatchObject({ linkStepsReset: 1 });
    // ...and the refused one is named, with the remote's answer, its batches and the way out.
    expect(report.institutes.find((i) => i.instituteId === REFUSED)).toMatchObject({
      refused: true,
      httpStatus: 404,
      mappings: 2,
      batchIds: ['gone-1', 'gone-2'],
    });
    expect(report.errors).toEqual([expect.stringContaining(`institute ${REFUSED}: the remote refused its listing (listClasses failed with HTTP 404`)]);
    expect(report.errors[0]).toContain(`classroom-sync abandon --institute ${REFUSED} gone-1 gone-2`);
    // The log line carries the institute as a field; the run record keeps the same words.
    const line = stderr
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.instituteId === REFUSED);
    expect(line).toMatchObject({ refused: true, httpStatus: 404, batches: 2, msg: report.errors[0] });
    const run = await h.runtime.database.pool.query('select error from reconciliation_runs where id = $1', [report.runId]);
    expect(run.rows[0].error).toBe(report.errors[0]);

    // The text report says it too (read while the worker repairs: a dry run changes nothing).
    const dryRun = cli(['reconcile', '--dry-run']);
    // The repair is real: the worker re-runs the link steps and the batch is synced with a link again.
    await untilSynced(h, 'ok-1', { instituteId: inst() });
    const events = (await readTimeline(h.runtime.database.db, { instituteId: inst(), batchId: 'ok-1' })) ?? [];
    expect(events.filter((e) => e.type === 'repair')).toMatchObject([{ detail: { category: 'link_missing' } }]);

    const text = await dryRun;
    expect(text.stdout).toContain('2 institute(s) (1 could not be read: see the errors at the end)');
    expect(text.stdout).toContain(`error: institute ${REFUSED}: the remote refused its listing`);
  });

  it('keeps every scheduled pass failing, so the alert fires, until its batches are abandoned; then the passes succeed', async () => {
    expect(await scheduledPass()).toBe('failed');
    expect(await metric('classroom_sync_reconcile_runs_total', '{result="error"}')).toBe(1);
    expect(await metric('classroom_sync_reconcile_runs_total', '{result="ok"}')).toBe(0);
    expect(await metric('classroom_sync_batches', '{state="failed"}')).toBe(2);

    const abandoned = await cli(['abandon', '--institute', REFUSED, '--reason', 'institute closed its account', 'gone-1', 'gone-2']);
    expect(abandoned.code, abandoned.stderr).toBe(0);
    expect(abandoned.stdout).toContain(`gone-1: failed → abandoned (undo: classroom-sync abandon --undo --institute ${REFUSED} gone-1)`);
    expect(abandoned.stdout).toContain('2 abandoned');

    expect(await scheduledPass()).toBe('completed');
    // The series the alert reads moves: a successful pass, with its time.
    expect(await metric('classroom_sync_reconcile_runs_total', '{result="ok"}')).toBe(1);
    const passed = await h.runtime.database.pool.query('select finished_at from reconciliation_runs where error is null order by id desc limit 1');
    expect(await metric('classroom_sync_reconcile_last_success_timestamp_seconds')).toBeCloseTo(passed.rows[0].finished_at.getTime() / 1000, 3);
    // Abandoned batches no longer count as failed anywhere an alert or dashboard looks (once the
    // scrape's database counts, read at most every few seconds, are read again).
    await waitFor(async () => (await metric('classroom_sync_batches', '{state="failed"}')) === 0, 'no failed batch on /metrics', 20_000);
    expect(await metric('classroom_sync_batches', '{state="abandoned"}')).toBe(2);
    const run = await h.runtime.database.pool.query('select institutes, error from reconciliation_runs order by id desc limit 1');
    expect(run.rows[0]).toEqual({ institutes: [inst()], error: null });
  });

  it('shows the abandon in history, status and the read API; retry says to undo first', async () => {
    // Commands that change nothing, side by side.
    const [history, status, retry, all] = await Promise.all([
      cli(['history', 'gone-1', '--institute', REFUSED]),
      cli(['status', 'gone-1', '--institute', REFUSED]),
      cli(['retry', '--institute', REFUSED, 'gone-1']),
      cli(['retry', '--failed']),
    ]);
    expect(history.stdout).toMatch(/abandoned failed → abandoned \{"reason":"institute closed its account"\}/);

    expect(status.stdout).toMatch(/state\s+abandoned/);
    expect(status.stdout).toMatch(/abandoned\s+\S+ \(was failed\): institute closed its account/);

    const one = await call(`${worker.url}/v1/batches/gone-1?instituteId=${REFUSED}`, { headers: BEARER });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ state: 'abandoned', classId: null, abandoned: { from: 'failed', reason: 'institute closed its account' } });
    const list = await call(`${worker.url}/v1/batches?state=abandoned`, { headers: BEARER });
    expect(list.body.items.map((b: { batchId: string }) => b.batchId)).toEqual(['gone-1', 'gone-2']);
    const synced = await call(`${worker.url}/v1/batches/ok-2`, { headers: BEARER });
    expect(synced.body.abandoned).toBeNull();

    expect(retry.code).toBe(1);
    expect(retry.stderr).toContain(
      `batch gone-1 is abandoned (institute ${REFUSED}); nothing was retried. Undo that first with \`classroom-sync abandon --undo --institute ${REFUSED} gone-1\``,
    );
    expect(await stateOf('gone-1', REFUSED)).toBe('abandoned');
    // `retry --failed` passes them over: they are not failed any more.
    expect(all.stdout).toContain('no batch is failed; nothing to retry');
  });

  it('refuses to abandon a batch that has a class, or one it does not know', async () => {
    const { code, stdout, stderr } = await cli(['abandon', 'ok-2', 'nobody']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^ok-2: not abandoned: it is synced \(class \w+, join link stored\): there is nothing to abandon$/m);
    expect(stderr).toMatch(new RegExp(`^nobody: not known under institute ${inst()}$`, 'm'));
    expect(stdout).toContain('1 refused, 1 unknown');
    expect(await stateOf('ok-2')).toBe('synced');
  });

  it('names the institute a batch is known under when it is given without its --institute, abandoning or undoing', async () => {
    const hint = `gone-1: not known under institute ${inst()}; it is known under institute ${REFUSED}: add --institute ${REFUSED}`;
    // Each is refused and changes nothing: side by side.
    const [abandon, undo, json] = await Promise.all([cli(['abandon', 'gone-1']), cli(['abandon', '--undo', 'gone-1']), cli(['abandon', '--json', 'gone-1'])]);
    expect(abandon.code).toBe(1);
    expect(abandon.stderr.trim()).toBe(hint);
    expect(undo.code).toBe(1);
    expect(undo.stderr.trim()).toBe(hint);
    expect(JSON.parse(json.stdout)).toMatchObject({ batchId: 'gone-1', outcome: 'unknown', message: hint.slice('gone-1: '.length), knownUnder: [REFUSED] });
    // Nothing changed under either institute.
    expect(await stateOf('gone-1', REFUSED)).toBe('abandoned');
  });

  it('is reversible: undo puts the batch back where it was, in history too, and the institute is reconciled again', async () => {
    const undone = await cli(['abandon', '--undo', '--institute', REFUSED, 'gone-2']);
    expect(undone.code, undone.stderr).toBe(0);
    expect(undone.stdout).toContain('gone-2: abandoned → failed; `classroom-sync retry` resumes it');
    expect(await stateOf('gone-2', REFUSED)).toBe('failed');
    const events = (await readTimeline(h.runtime.database.db, { instituteId: REFUSED, batchId: 'gone-2' })) ?? [];
    expect(events.slice(-2)).toMatchObject([
      { type: 'abandoned', fromState: 'failed', toState: 'abandoned' },
      { type: 'abandon_undone', fromState: 'abandoned', toState: 'failed' },
    ]);
    // Its institute is listed again, and refused again: the matter is open again, on purpose.
    expect(await scheduledPass()).toBe('failed');

    // The library function, as an integrator's admin tool would call it.
    const [result] = await abandonBatches(
      { db: h.runtime.database.db, queue: h.runtime.queue, logger: h.runtime.logger },
      [{ instituteId: REFUSED, batchId: 'gone-2' }],
      {
        reason: 'again',
      },
    );
    expect(result).toEqual({ instituteId: REFUSED, batchId: 'gone-2', outcome: 'abandoned', from: 'failed' });
    expect(await scheduledPass()).toBe('completed');
    expect(await metric('classroom_sync_reconcile_runs_total', '{result="ok"}')).toBe(2);
  });

  it('abandons a pending batch (its job removed) and undo queues it again', async () => {
    const deps = { db: h.runtime.database.db, queue: h.runtime.queue, logger: h.runtime.logger };
    // Recorded while the remote refuses it, before any worker took it: pending, job waiting.
    await worker.sync.worker.pause();
    try {
      await publishBatches(publishDepsOf(h), [{ batchId: 'late-1', name: 'Late', subject: 'Art', instituteId: REFUSED }]);
      expect(await stateOf('late-1', REFUSED)).toBe('pending');
      const [result] = await abandonBatches(deps, [{ instituteId: REFUSED, batchId: 'late-1' }]);
      expect(result).toMatchObject({ outcome: 'abandoned', from: 'pending' });
      expect(await h.runtime.queue.getJobState(jobIdFor({ instituteId: REFUSED, batchId: 'late-1' }))).toBe('unknown');
      const [back] = await undoAbandon(deps, [{ instituteId: REFUSED, batchId: 'late-1' }]);
      expect(back).toMatchObject({ outcome: 'restored', to: 'pending', queued: true });
    } finally {
      worker.sync.worker.resume();
    }
    await waitFor(async () => (await stateOf('late-1', REFUSED)) === 'failed', 'late-1 synced into failed (403) once queued again');
  });
});
