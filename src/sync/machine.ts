// The per-batch state machine. Each remote call is followed by a recovery point in PostgreSQL, so a
// later run resumes after the last finished step and never repeats it:
//
//   pending ─add-class─▶ creating ─(ClassID stored)─▶ created ─edit-class─▶ link_enabled ─get-class─▶ synced
//                          │ outcome unknown: resolved by reading the listing (adopt | create | needs_review)
//
// A change of the batch (src/sync/change-steps.ts) goes before the next step once a class exists:
// edit-class with the new values (the state stays), or archiving it (→ cancelled); cancelled before
// any add-class, a batch goes straight to `cancelled`.
//
// `creating` is written *before* the POST leaves: finding it later means "a class may exist".
// Every write is one statement (src/mapping) that also extends the lease and stores the audit rows
// of the calls it follows; a step costs at most one round trip before its call and one after.
// Reads may lag writes on the remote: a class we created is read when the account's measured lag
// says it will be visible; one that get-class or edit-class does not know yet (404), or a join link
// not shown yet, is waited for (no attempt used) for SYNC_READ_LAG; and a listing that shows nothing licenses a second add-class only once that long
// has passed since the first was sent. A refused key is nobody's batch's fault: it waits, unchanged.
import type { BatchKey, MappingRow } from '../mapping/index.ts';
import * as mapping from '../mapping/index.ts';
import { monotonicClock } from '../support/clock.ts';
import { DeferError, PermanentSyncError } from './errors.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import { endRun } from './run-end.ts';
import { BatchRun } from './steps.ts';
import type { SyncDeps, SyncOutcome } from './types.ts';

export type { SyncDeps, SyncOutcome, SyncSettings, Transition } from './types.ts';

/**
 * How many times one job runs a batch again because a change arrived while it ran (each run
 * applies what was there when it started); past that, the change's own job or the sweep takes over.
 */
const CHANGE_ROUNDS = 3;

export interface RunOptions {
  /** A rate-limit slot the job reserved before the run (the lower lanes'): the first call uses it. */
  firstSlot?: Promise<number>;
  /** The job's last attempt: a failure that would be retried is recorded as final, under the lease. */
  lastAttempt?: boolean;
}

export async function runBatch(deps: SyncDeps, key: BatchKey, attempt: number, options: RunOptions = {}): Promise<SyncOutcome> {
  let outcome = await runOnce(deps, key, attempt, options);
  // Its last write may have come after a change was recorded (whose job BullMQ kept out while this
  // one was live), or may have released the lease short of rest (a reopen landed mid-archive).
  for (let round = 1; outcome.worked && outcome.moreToDo && round < CHANGE_ROUNDS; round += 1) {
    const again = await runOnce(deps, key, attempt, { ...(options.lastAttempt ? { lastAttempt: true } : {}) });
    outcome = { ...again, worked: true };
  }
  return { state: outcome.state, classId: outcome.classId, worked: outcome.worked };
}

async function runOnce(deps: SyncDeps, key: BatchKey, attempt: number, options: RunOptions): Promise<SyncOutcome & { moreToDo: boolean }> {
  const { leaseMs } = deps.settings;
  const { acquired, grantedAt } = await acquire(deps, key, attempt);
  switch (acquired.status) {
    case 'missing':
      throw new PermanentSyncError('not_recorded', 'no_row', `batch ${key.batchId} of institute ${key.instituteId} is not recorded; publish it again`);
    case 'terminal':
      return { state: acquired.row.state, classId: acquired.row.classId, worked: false, moreToDo: false };
    case 'busy':
      throw new DeferError(acquired.retryInMs, `batch ${key.batchId} is being synced by another runner`, 'busy', 'lease_busy');
  }
  const { lease } = acquired;
  const renew = () => mapping.touchLease(deps.db, lease, leaseMs);
  const keeper = new LeaseKeeper({ leaseMs, batchId: key.batchId, renew, logger: deps.logger, grantedAt, clock: deps.clock ?? monotonicClock });
  const run = new BatchRun(deps, lease, keeper, acquired.row, acquired.dbNow, { attempt, lastAttempt: options.lastAttempt === true }, options.firstSlot);
  try {
    const row = await runToCompletion(run);
    keeper.stop();
    return { state: row.state, classId: row.classId, worked: true, moreToDo: mapping.wantsRun(row) };
  } catch (error) {
    keeper.stop();
    // A run stopped by its lease ends as the lease's loss, whatever the call it stopped threw; a
    // run that brought its batch to rest ends as what it threw (needs_review, failed).
    throw await endRun(run, keeper.lost && !run.atRest ? keeper.lost : error);
  }
}

/**
 * A lease that runs out this soon is waited for in place, once: it is most likely a dead runner's
 * whose job came back just before its lease ended, and a trip through the queue would put the batch
 * behind every job waiting for a worker slot.
 */
const IN_PLACE_LEASE_WAIT_MS = 1_500;

/** The lease, and when the statement that granted it was sent (by the run's clock). */
async function acquire(deps: SyncDeps, key: BatchKey, attempt: number): Promise<{ acquired: mapping.AcquireResult; grantedAt: number }> {
  const { leaseMs, requestTimeoutMs } = deps.settings;
  const clock = deps.clock ?? monotonicClock;
  for (let waited = false; ; waited = true) {
    const grantedAt = clock.now();
    const acquired = await mapping.acquireLease(deps.db, key, deps.workerId, leaseMs, attempt, requestTimeoutMs);
    if (acquired.status !== 'busy' || waited || acquired.retryInMs > IN_PLACE_LEASE_WAIT_MS) return { acquired, grantedAt };
    await clock.sleep(acquired.retryInMs);
  }
}

/**
 * Steps until the batch is at rest. A write not visible yet ends the run (a NotVisibleYetError):
 * the job waits in the queue, holding no worker slot, and reads again when the account's measured
 * lag says it will find it (src/sync/read-schedule.ts). A lost lease stops it between steps too.
 */
async function runToCompletion(run: BatchRun): Promise<MappingRow> {
  for (;;) {
    if (run.atRest) return run.current;
    run.keeper.assertOwned();
    await run.step();
  }
}
