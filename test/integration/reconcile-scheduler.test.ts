// The schedule: however many worker processes start, one job scheduler; each tick runs one pass.
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { reconciliationRuns } from '../../src/db/schema/index.ts';
import { type Reconciler, RECONCILE_SCHEDULER_ID, createReconciler } from '../../src/reconcile/scheduler.ts';
import type { ReconcileReport } from '../../src/reconcile/types.ts';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';

const harness = useHarness({ env: { RECONCILE_EVERY: '15m' } });
const { h } = harness;
let second: Runtime;
const reconcilers: Reconciler[] = [];

beforeAll(() => {
  // A second "process": its own runtime (pool, Redis connections), same database and queue prefix.
  second = harness.runtime(h.config);
  harness.defer(async () => {
    for (const r of reconcilers) await r.close();
  });
});

describe('reconciliation schedule', () => {
  it('registers one scheduler across two worker instances, every RECONCILE_EVERY, aligned to UTC slots', async () => {
    reconcilers.push(await createReconciler(h.runtime), await createReconciler(second));
    const queue = reconcilers[0]!.queue;
    const schedulers = await queue.getJobSchedulers();
    expect(schedulers).toHaveLength(1);
    expect(schedulers[0]).toMatchObject({ key: RECONCILE_SCHEDULER_ID, every: 15 * 60_000 });
    expect(schedulers[0]!.next! % (15 * 60_000)).toBe(0);
    // One pending tick, not one per process.
    expect(await queue.getDelayedCount()).toBe(1);
    // Starting a third time (a restart) still leaves one.
    reconcilers.push(await createReconciler(h.runtime, { worker: false }));
    expect(await queue.getJobSchedulers()).toHaveLength(1);
    expect(await queue.getDelayedCount()).toBe(1);
    for (const r of reconcilers.splice(0)) await r.close();
  });

  it('each tick is one pass, run by exactly one of the workers, recorded and handed to onRun', async () => {
    const seen: ReconcileReport[] = [];
    const onRun = (report: ReconcileReport) => seen.push(report);
    // A short interval (re-upserting changes the schedule) so ticks come within the test.
    reconcilers.push(await createReconciler(h.runtime, { everyMs: 1_000, onRun }), await createReconciler(second, { everyMs: 1_000, onRun }));
    const queue = reconcilers[0]!.queue;
    expect(await queue.getJobSchedulers()).toMatchObject([{ key: RECONCILE_SCHEDULER_ID, every: 1_000 }]);

    await waitFor(async () => (await queue.getCompletedCount()) >= 2, 'two scheduled passes completed', 20_000);
    // Stop both workers, then compare: every completed tick made exactly one recorded pass.
    for (const r of reconcilers) await r.worker!.close();
    const completed = await queue.getCompleted();
    const runs = await h.runtime.database.db.select().from(reconciliationRuns).where(eq(reconciliationRuns.trigger, 'schedule'));
    expect(runs.length).toBe(completed.length);
    expect(new Set(completed.map((j) => j.returnvalue.runId)).size).toBe(completed.length);
    expect(runs.every((r) => r.finishedAt !== null && r.error === null)).toBe(true);
    expect(seen.map((r) => r.runId).sort()).toEqual(runs.map((r) => r.id).sort());
    expect(seen[0]!.counts).toHaveProperty('in_sync');
  });

  it('RECONCILE_EVERY=0 removes the schedule', async () => {
    const r = await createReconciler(h.runtime, { everyMs: 0, worker: false });
    reconcilers.push(r);
    expect(await r.queue.getJobSchedulers()).toHaveLength(0);
  });
});
