// What can happen to a batch, one path at a time: intake events, runs, the remote's faults, crashes,
// an operator's retry / abandon / undo, exhaustion, reconciliation, the sweep, a class deleted on the
// remote. Each acts on the real system, keeps the model's few facts, and checks the design's rule for
// its own path (before and after rows); the invariants are checked by the command around it.
import type { BatchRow } from '../../src/db/schema/index.ts';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import * as mapping from '../../src/mapping/index.ts';
import { runReconciliation } from '../../src/reconcile/run.ts';
import { reconcileOptionsOf } from '../../src/reconcile/settings.ts';
import { reconcileDepsOf } from '../../src/reconcile/setup.ts';
import type { FaultKind, SandboxOperation } from '../../src/sandbox/index.ts';
import { abandonBatches, undoAbandon } from '../../src/sync/abandon-batches.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { bothQueues } from '../../src/sync/queue.ts';
import { BatchAbandonedError } from '../../src/sync/abandon-batches.ts';
import { retryBatches } from '../../src/sync/retry-batches.ts';
import { sweepStuckBatches } from '../../src/sync/sweep.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { type PauseAt, pausingClient } from './clients.ts';
import { expectedName } from './invariants.ts';
import type { Model, RealSystem } from './real-system.ts';
import { untilAborted, wakeZombies } from './zombies.ts';
import * as rules from './rules.ts';

/** What a path landing in a race may know of the run it races: its signal, while it is parked at a gate. */
export interface RaceContext {
  parked(): AbortSignal | undefined;
}

export interface Action {
  readonly name: string;
  act(m: Model, r: RealSystem, race?: RaceContext): Promise<void>;
}

const logger = createLogger({ level: 'silent' });
const action = (name: string, act: Action['act']): Action => ({ name, act, toString: () => name }) as Action;

/**
 * Runs `change` between two reads of the row and records what `rule` finds wrong with the move. The
 * read after is the invariants' whole view, kept for the Step that ran this path (its last act).
 */
async function ruled(r: RealSystem, kind: string, change: () => Promise<unknown>, rule: (before: BatchRow, after: BatchRow) => string | undefined) {
  const before = await r.row();
  await change();
  const problem = rule(before, (await r.viewAfterChange()).row);
  if (!problem) return;
  // Named by the state it should have reached ("expected <state> …") and the state it left, so one can be looked past.
  const expected = problem.startsWith('expected ') ? `-${problem.split(' ')[1]}` : '';
  r.violation(`${kind}${expected}@${before.state}`, `from ${before.state}: ${problem}`);
}

export type IntakeKind = 'created' | 'updated' | 'cancelled';

/** An integrator's event with the next version: `name` and `subject` are what it sets (if anything). */
export function intake(kind: IntakeKind, values: { name?: string; subject?: string } = {}): Action {
  const shown = Object.entries(values).map(([k, v]) => `${k}: ${v}`);
  return action(`${kind}(${shown.join(', ')})`, async (m, r) => {
    m.version += 1;
    const base = { ...r.key, version: m.version };
    if (kind === 'cancelled') {
      m.cancelWanted = true;
      await ruled(r, 'rule-intake-cancel', () => publishBatchCreated(publishDepsOf(r.h), { ...base, type: 'batch.cancelled' }), rules.cancelProblem);
      return;
    }
    if (kind === 'created') Object.assign(m, { name: values.name ?? m.name, subject: values.subject ?? m.subject });
    else Object.assign(m, values);
    m.cancelWanted = false;
    const event = kind === 'created' ? { ...base, name: m.name, subject: m.subject } : { ...base, type: 'batch.updated', ...values };
    const name = expectedName(r, m);
    await ruled(
      r,
      'rule-intake-update',
      () => publishBatchCreated(publishDepsOf(r.h), event),
      (b, a) => rules.updateProblem(b, a, name),
    );
  });
}

export const run = action('run', async (_m, r) => {
  const end = await r.run();
  r.count(`run → ${end.state ?? end.kind}`);
});

/** The next call of `operation` gets `fault` (the sandbox's one-shot faults). */
export const fault = (operation: SandboxOperation, kind: FaultKind): Action =>
  action(`fault(${operation}: ${kind})`, async (_m, r) => r.h.sandbox.faults.enqueue({ operation, fault: kind }));

/**
 * A run that stops at its first call of `operation` (at `at`): its worker killed (never resumed) or
 * paused (a zombie, woken later); either way its lease runs out (by SQL, not by waiting).
 */
export const crash = (operation: SandboxOperation, at: PauseAt, zombie: boolean): Action =>
  action(`${zombie ? 'pause' : 'kill'}(${operation} ${at})`, async (_m, r) => {
    const paused = pausingClient(operation, at);
    const { workerId, done } = r.startRun((observed) => paused.wrap(observed));
    const first = await Promise.race([paused.reached.then(() => 'paused' as const), done.then(() => 'finished' as const)]);
    if (first === 'finished') return;
    r.count(`${zombie ? 'paused' : 'killed'} at ${operation} ${at}`);
    const { leaseEpoch } = await r.row();
    await r.expireLease(workerId);
    if (zombie) r.zombies.push({ workerId, resume: paused.resume, run: done, expiredAt: Date.now(), epoch: leaseEpoch, aborted: paused.aborted });
  });

export const wake = action('wake zombies', (_m, r) => wakeZombies(r));

const sweepDeps = (r: RealSystem) => ({ db: r.db, queue: r.h.runtime.queue, redis: r.h.runtime.redis, logger });

export const retry = action('retry', (_m, r) =>
  ruled(
    r,
    'rule-retry',
    () =>
      retryBatches(sweepDeps(r), { keys: [r.key] }).catch((error: unknown) => {
        if (!(error instanceof BatchAbandonedError)) throw error;
      }),
    rules.retryProblem,
  ),
);

export const abandon = action('abandon', (_m, r) => ruled(r, 'rule-abandon', () => abandonBatches(sweepDeps(r), [r.key]), rules.abandonProblem));

export const undo = action('undo abandon', (_m, r) => ruled(r, 'rule-undo', () => undoAbandon(sweepDeps(r), [r.key]), rules.undoProblem));

/** The job's last attempt failed (a retry kind): what the processor's `recordExhausted` writes. */
export const exhaust = action('exhaust', (_m, r) =>
  ruled(
    r,
    'rule-exhaust',
    () => mapping.markExhausted(r.db, r.key, { message: 'remote inconsistent', kind: 'remote_inconsistent' }, { attempt: 5, workerId: 'processor' }),
    rules.exhaustProblem,
  ),
);

/** One reconciliation pass over the batch's institute: it never makes nor deletes a class. */
export const reconcile = action('reconcile', async (_m, r) => {
  r.noteClasses();
  const before = r.h.sandbox.store.size;
  const options = { trigger: 'mbt', ...reconcileOptionsOf(r.h.config), stuckAfterMs: 0, graceMs: 0, linkChecks: 5, instituteIds: [r.key.instituteId] };
  const report = await runReconciliation(reconcileDepsOf(r.h.runtime), options);
  r.count(`reconcile adopted ${report.repairs.adopted}`);
  if (r.h.sandbox.store.size !== before)
    r.violation('rule-reconcile', `a reconciliation pass changed the number of classes: ${before} → ${r.h.sandbox.store.size}`);
});

/** The sweep: a batch with work and nobody holding it gets a live job. The counts are folded meanwhile. */
export const sweep = action('sweep', async (_m, r) => {
  // The worker's housekeeping folds the counts on a timer of its own: here, alongside the other paths.
  await Promise.all([sweepStuckBatches(sweepDeps(r), { stuckAfterMs: 0 }), mapping.compactCounts(r.db)]);
  const row = await r.row();
  const work = !mapping.TERMINAL_STATES.includes(row.state) || mapping.changeDue(row);
  if (!work || rules.leaseLive(row)) return;
  const states = await Promise.all(bothQueues(r.h.runtime.queue).map((q) => q.getJobState(jobIdFor(r.key))));
  if (!states.some((s) => ['waiting', 'delayed', 'prioritized', 'active'].includes(s))) {
    r.violation('rule-sweep', `the batch has work (${row.state}) and no lease, but the sweep left it without a live job (${states})`);
  }
});

/**
 * Someone else makes a class whose name the batch's could have been rewritten to (its first word:
 * a `similar` match, src/sync/matching.ts): a listing that must settle an add-class in doubt can no
 * longer tell, and the batch goes to needs_review. Removed again before the way to rest (rest.ts).
 */
export const foreignClass = action('a similar class made by someone else', async (m, r) => {
  const name = m.name.split(' ')[0]!;
  const answer = await fetch(`${r.h.sandbox.url}/__sandbox/classes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, instituteId: r.key.instituteId }),
  });
  const body = (await answer.json()) as { data?: { id?: string } };
  if (!answer.ok || !body.data?.id) throw new Error(`the sandbox would not make class ${name}: ${answer.status}`);
  r.foreignIds.add(body.data.id);
});

/** Whoever made them deletes the classes like the batch's: a listing may tell again (reconciliation may adopt). */
export const foreignGone = action('the similar classes deleted by whoever made them', async (_m, r) => {
  for (const id of r.foreignIds) r.h.sandbox.store.delete(id);
  r.foreignIds.clear();
});

/** The remote's operator deletes the batch's class (the one it stores). */
export const deleteClass = action('delete class on the remote', async (m, r) => {
  const { classId } = await r.row();
  if (classId === null || !r.h.sandbox.store.get(classId)) return;
  r.noteClasses();
  const answer = await fetch(`${r.h.sandbox.url}/__sandbox/classes/${classId}`, { method: 'DELETE' });
  if (!answer.ok) throw new Error(`the sandbox would not delete class ${classId}: ${answer.status}`);
  m.classDeleted = true;
});

/**
 * Whoever holds the lease looks dead: it runs out, the holder's heartbeat has the time to notice
 * (as a frozen process's clock would), and another worker runs the batch.
 */
export const takeover = action('takeover', async (_m, r, race) => {
  const since = Date.now();
  await r.pool.query(`update batch_classes set lease_expires_at = now() - interval '1 millisecond' where batch_id = $1 and lease_expires_at > now()`, [
    r.key.batchId,
  ]);
  const parked = race?.parked();
  if (parked) await untilAborted(() => parked.aborted, since);
  const end = await r.run();
  r.count(`takeover run → ${end.state ?? end.kind}`);
});
