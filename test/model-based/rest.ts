// The end of every sequence: the liveness check (invariant 7). Faults cleared, the classes someone
// else made removed (a listing can tell again), zombies woken and one reconciliation pass made, a
// fault-free path (runs, the sweep, an operator's retry of failed / needs_review a few times) must
// bring the batch to rest, where the model says it ends: cancelled if a cancel is wanted, synced
// otherwise (failed only if the remote lost its class), or abandoned if an operator gave it up.
import type { BatchRow } from '../../src/db/schema/index.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { retryBatches } from '../../src/sync/retry-batches.ts';
import { sweepStuckBatches } from '../../src/sync/sweep.ts';
import { checkInvariants, describe } from './invariants.ts';
import type { Model, RealSystem } from './real-system.ts';
import { foreignGone, reconcile } from './actions.ts';
import { atRest, leaseLive } from './rules.ts';
import { wakeZombies } from './zombies.ts';

const logger = createLogger({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Operator retries allowed on the way to rest. */
const RETRIES = 3;
/** Runs (and sweeps) allowed on the way to rest. */
const ROUNDS = 60;

export async function driveToRest(real: RealSystem, model: Model): Promise<void> {
  real.h.sandbox.faults.clear();
  real.h.sandbox.faults.set(real.baseFaults());
  await foreignGone.act(model, real);
  await wakeZombies(real);
  await checkInvariants(real, model, 'waking every zombie');
  // One reconciliation pass: a batch in needs_review whose listing can tell now is adopted.
  await reconcile.act(model, real);
  await checkInvariants(real, model, 'a reconciliation pass on the way to rest');
  const deps = { db: real.db, queue: real.h.runtime.queue, redis: real.h.runtime.redis, logger };
  let retries = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const row = await real.row();
    if (atRest(row)) {
      if ((row.state === 'failed' || row.state === 'needs_review') && retries < RETRIES) {
        retries += 1;
        real.count(`rest: retried ${row.state}`);
        await retryBatches(deps, { keys: [real.key] });
        continue;
      }
      return arrived(real, model, row);
    }
    // A lease some run left behind (a write that extended it as the batch came to rest under it) runs out by itself.
    if (leaseLive(row)) await sleep(Math.min(1_000, row.leaseExpiresAt!.getTime() - Date.now() + 20));
    await sweepStuckBatches(deps, { stuckAfterMs: 0 });
    const end = await real.run();
    if (end.delayMs !== undefined) await sleep(Math.min(end.delayMs, 200));
    await checkInvariants(real, model, `run ${round} on the way to rest (${end.state ?? end.kind})`);
  }
  real.violation('inv7-no-rest', `not at rest after ${ROUNDS} fault-free runs: ${describe(await real.row())}`);
  await checkInvariants(real, model, 'the way to rest');
}

/** At rest (`row`, just read): where the model says the batch ends, and its join link as the remote has it. */
async function arrived(real: RealSystem, model: Model, row: BatchRow): Promise<void> {
  real.count(`rest: ${row.state}`);
  const expected = model.cancelWanted ? ['cancelled'] : model.classDeleted ? ['synced', 'failed'] : ['synced'];
  if (row.state !== 'abandoned' && !expected.includes(row.state)) {
    const why = model.cancelWanted ? 'a cancel is wanted' : model.classDeleted ? 'its class was deleted on the remote' : 'it is wanted';
    real.violation('inv7-rest-state', `came to rest ${row.state} (${row.lastErrorKind}: ${row.lastError}) where ${expected.join(' or ')} was due: ${why}`);
  }
  const own = row.classId === null ? undefined : real.h.sandbox.store.get(row.classId);
  if (row.state === 'synced' && own && row.joinLink !== own.joinMagicLink) {
    real.violation('inv7-join-link', `synced with join link ${row.joinLink}, the remote's is ${own.joinMagicLink}`);
  }
  await checkInvariants(real, model, 'coming to rest');
}
