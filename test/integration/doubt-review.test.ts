// What a second adversarial review of the doubt rule found: a refused edit's read-back must take
// only what the batch sent (never a hand rename on the remote, never the old name a new one starts
// with), and a runner that died holding a batch with no class cannot have sent an edit that a later
// one must wait for. Runs are driven one at a time (test/helpers/runs.ts) against real PostgreSQL,
// Redis and the sandbox.
import { beforeEach, describe, expect, it } from 'vitest';
import { publishBatchCreated, publishBatchUpdated } from '../../src/intake/publish.ts';
import type { ReconcileOptions } from '../../src/reconcile/run.ts';
import { type Harness, publishDepsOf } from '../helpers/harness.ts';
import { messagesOf, runOnce, runToRest } from '../helpers/runs.ts';
import { reconcileOnce } from '../helpers/reconcile.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h } = useHarness();
beforeEach(() => h.sandbox.faults.clear());

const remoteClass = (x: Harness, classId: string | null) => x.sandbox.state().classes?.find((c) => c.id === classId);
const inst = () => h.config.classroom.instituteId;

/** Published and synced: one class, its link stored. */
async function synced(batchId: string, name: string, subject = 'Maths') {
  await publishBatchCreated(publishDepsOf(h), { batchId, name, subject, version: 1 });
  const row = await runToRest(h, batchId);
  expect(row.state, 'precondition: synced').toBe('synced');
  return row;
}

const reconcile = (options: Partial<ReconcileOptions> = {}) => reconcileOnce(h, options);

describe('a refused edit reads the class back', () => {
  it('a class renamed on the remote by hand is still reported as name_drift after a refused edit of the batch', async () => {
    const row = await synced('d1', 'Drift 1');
    // Someone renames the class on the remote: reconciliation reports it.
    h.sandbox.store.edit(row.classId!, { name: { kept: 'Renamed by hand', sent: 'Renamed by hand' } });
    expect((await reconcile()).counts.name_drift, 'precondition: the drift is reported').toBe(1);
    // The integrator changes the subject; the remote refuses that edit. The read-back finds the
    // hand-made name and stores it as the name "the remote kept" for ours.
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'd1', subject: 'Physics', version: 2 });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'bodyRejected' });
    const rest = await runToRest(h, 'd1');
    expect(rest).toMatchObject({ state: 'synced', className: 'Drift 1', nextClassName: null });
    expect(remoteClass(h, row.classId)?.name).toBe('Renamed by hand');
    // The class still does not carry the batch's name: the drift must still be reported (and so
    // be repairable with RECONCILE_REPAIR_NAMES).
    const after = await reconcile();
    expect(after.counts.name_drift, 'name_drift after the refused edit').toBe(1);
  });
});

describe('a refused rename read back as carried', () => {
  it('a refused rename whose old name is a prefix of the new one is not taken as carried: the next accepted change renames the class', async () => {
    // The old name is at least CLASSROOM_NAME_MIN_CUT (16) characters and a prefix of the new one.
    const row = await synced('d2', 'Physics 101 Morning');
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'd2', name: 'Physics 101 Morning Group B', version: 2 });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'bodyRejected' });
    const refused = await runToRest(h, 'd2');
    expect(remoteClass(h, row.classId)?.name, 'precondition: the rename was refused').toBe('Physics 101 Morning');
    // The row must not claim the class carries the refused name, nor tell the integrator it does.
    expect.soft({ className: refused.className, nextClassName: refused.nextClassName }).toEqual({
      className: 'Physics 101 Morning',
      nextClassName: 'Physics 101 Morning Group B',
    });
    const told = (await messagesOf(h, 'd2')).filter((m) => m.type === 'batch.updated').map((m) => m.data.className);
    expect.soft(told, 'batch.updated naming a name the class does not carry').not.toContain('Physics 101 Morning Group B');
    // A later change is accepted: the batch at rest in synced carries the newest accepted name.
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'd2', subject: 'Chemistry', version: 3 });
    const rest = await runToRest(h, 'd2');
    expect(rest.state).toBe('synced');
    expect(remoteClass(h, row.classId), 'the class after an accepted change').toMatchObject({ name: 'Physics 101 Morning Group B', subject: 'Chemistry' });
  });
});

describe('calls_settled_at: an edit waits only for edits that may still land', () => {
  it('a runner that died holding a batch with no class (it could have sent no edit) does not make the first edit wait', async () => {
    await publishBatchCreated(publishDepsOf(h), { batchId: 'd3', name: 'Settled 3', subject: 'Maths', version: 1 });
    // A runner took the pending batch and died before sending anything (its lease ran out): with no
    // class, none of its calls can have been an edit-class.
    await h.runtime.database.pool.query(
      `update batch_classes set lease_owner = 'dead', lease_epoch = lease_epoch + 1, lease_expires_at = now() - interval '1 millisecond'
        where institute_id = $1 and batch_id = 'd3' and state = 'pending' and class_id is null`,
      [inst()],
    );
    const row = await runToRest(h, 'd3');
    expect(row.state, 'precondition: synced').toBe('synced');
    await publishBatchUpdated(publishDepsOf(h), { batchId: 'd3', subject: 'Physics', version: 2 });
    const run = await runOnce(h, 'd3');
    expect((run.error as { reason?: string } | undefined)?.reason ?? null, 'the edit waited for an edit nobody sent').toBeNull();
    expect(remoteClass(h, row.classId)?.subject).toBe('Physics');
  });
});
