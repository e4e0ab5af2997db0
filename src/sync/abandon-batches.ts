// Giving a batch up, and taking that back. An abandoned batch is one an operator has decided will
// never get a class (typically: the remote refuses its institute). It stays recorded, but no sync
// job, sweep, reconciliation pass or alert counts it any more. `undoAbandon` returns it to the exact
// state it was abandoned from. Both write their audit event in the statement that changes the state.
//
// Only batches without a class can be abandoned: a synced (or half-synced) batch has a class on the
// remote, and dropping it would leave that class unaccounted for. A batch a worker holds right now,
// or one whose add-class may still be in flight (`creating`), is refused too: its outcome is not
// settled yet. A `needs_review` batch may be abandoned although a class of it may exist (its
// add-class's outcome is unknown): the result says so, and reconciliation keeps reporting it until
// one is found or an operator confirms there is none (`abandon --confirm-no-class`).
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import type { BatchState, Db } from '../mapping/index.ts';
import { type BatchKey, jobIdFor } from './keys.ts';
import { type SyncQueue, bothQueues } from './queue.ts';
import { requeue } from './sweep.ts';

export { ABANDONABLE_STATES } from '../mapping/index.ts';

export interface AbandonResult extends BatchKey {
  /** `abandoned` now; `already_abandoned` (nothing changed); `refused` (see `message`); `unknown` batch. */
  outcome: 'abandoned' | 'already_abandoned' | 'refused' | 'unknown';
  /** The state before; null for an unknown batch. */
  from: BatchState | null;
  /** Why it was refused, and what to do instead; for an abandoned batch that may have a class, what that means. */
  message?: string;
  /** Abandoned while a class of it may exist on the remote (its add-class's outcome is unknown). */
  mayHaveClass?: boolean;
  /** An operator confirmed that no class of it exists (`--confirm-no-class`): the doubt is ruled out. */
  classRuledOut?: boolean;
}

export interface UndoAbandonResult extends BatchKey {
  /** `restored` to `to`; `not_abandoned` (nothing changed); `unknown` batch. */
  outcome: 'restored' | 'not_abandoned' | 'unknown';
  /** The state now. */
  to: BatchState | null;
  /** A batch restored to an unfinished state is queued again, so it carries on syncing. */
  queued: boolean;
}

/** `retry` of an abandoned batch: it must be taken back first, on purpose. */
export class BatchAbandonedError extends Error {
  override readonly name = 'BatchAbandonedError';
  constructor(readonly keys: readonly BatchKey[]) {
    const ids = keys.map((k) => k.batchId).join(' ');
    super(
      `${keys.length === 1 ? `batch ${ids} is` : `batches ${ids} are`} abandoned (institute ${keys[0]?.instituteId}); nothing was retried. ` +
        `Undo that first with \`classroom-sync abandon --undo --institute ${keys[0]?.instituteId} ${ids}\`, then retry.`,
    );
  }
}

interface Deps {
  db: Db;
  queue: SyncQueue;
  /** Told when a job could not be removed (Redis down); the abandon itself stands. */
  logger: Pick<Logger, 'warn'>;
}

/** What `abandon` is told: the operator's reason, and whether they checked that no class of the batches exists. */
export interface AbandonOptions {
  reason?: string | null;
  /** The operator checked the remote: no class of these batches exists (rules out the doubt of an unknown add-class). */
  confirmNoClass?: boolean;
}

/** What an abandoned batch that may have a class means, and how to end it. */
export const MAY_HAVE_CLASS_NOTE =
  'its add-class was sent and its outcome is unknown, so a class of it may exist on the remote: reconciliation keeps reporting it until one is found, or until you check the listing and confirm there is none (`classroom-sync abandon --confirm-no-class`)';

/**
 * Abandons each batch that can be; explains each that cannot. `reason` is stored with the batch and in
 * its audit event. The batch's queued or failed job, if any, is removed (a running one cannot be: it
 * finds the batch terminal and stops). With `confirmNoClass`, the doubt of each abandoned batch (this
 * call's or an earlier one's) is ruled out.
 */
export async function abandonBatches(deps: Deps, keys: readonly BatchKey[], options: AbandonOptions = {}): Promise<AbandonResult[]> {
  if (keys.length === 0) return [];
  const changed = await mapping.markAbandoned(deps.db, keys, options.reason ?? null);
  const ruledOut = new Set(
    (options.confirmNoClass ? await mapping.ruleOutClass(deps.db, keys, options.reason ?? null) : []).map((k) => keyOf(k.instituteId, k.batchId)),
  );
  const inDoubt = new Set(changed.filter((r) => r.mayHaveClass).map((r) => keyOf(r.instituteId, r.batchId)));
  const done = new Map(changed.map((r) => [keyOf(r.instituteId, r.batchId), r.from]));
  await removeJobs(
    deps,
    keys.filter((k) => done.has(keyOf(k.instituteId, k.batchId))),
  );
  const rest = await readRows(
    deps.db,
    keys.filter((k) => !done.has(keyOf(k.instituteId, k.batchId))),
  );
  return keys.map((k): AbandonResult => {
    const id = keyOf(k.instituteId, k.batchId);
    const from = done.get(id);
    const ruled = ruledOut.has(id) ? { classRuledOut: true } : {};
    if (!from) return { ...explain(k, rest.get(id)), ...ruled };
    if (inDoubt.has(id) && !ruledOut.has(id)) return { ...k, outcome: 'abandoned', from, mayHaveClass: true, message: MAY_HAVE_CLASS_NOTE };
    return { ...k, outcome: 'abandoned', from, ...ruled };
  });
}

/** Returns each abandoned batch to the state it was abandoned from (and queues it if that is unfinished). */
export async function undoAbandon(deps: Deps, keys: readonly BatchKey[], options: { reason?: string | null } = {}): Promise<UndoAbandonResult[]> {
  if (keys.length === 0) return [];
  const changed = await mapping.restoreAbandoned(deps.db, keys, options.reason ?? null);
  const restored = new Map(changed.map((r) => [keyOf(r.instituteId, r.batchId), r.to]));
  const rest = await readRows(
    deps.db,
    keys.filter((k) => !restored.has(keyOf(k.instituteId, k.batchId))),
  );
  const results: UndoAbandonResult[] = [];
  for (const k of keys) {
    const to = restored.get(keyOf(k.instituteId, k.batchId));
    if (to) {
      // failed / needs_review wait for an operator's `retry`, as they did before the abandon.
      const queued = to === 'pending' ? await requeue(deps.queue, k, { lane: 'operator' }) : false;
      results.push({ ...k, outcome: 'restored', to, queued });
    } else {
      const row = rest.get(keyOf(k.instituteId, k.batchId));
      results.push({ ...k, outcome: row ? 'not_abandoned' : 'unknown', to: row?.state ?? null, queued: false });
    }
  }
  return results;
}

interface RowFacts {
  state: BatchState;
  classId: string | null;
  leasedUntil: Date | null;
}

/** Why a batch that was not abandoned could not be, in words an operator can act on. */
function explain(k: BatchKey, row: RowFacts | undefined): AbandonResult {
  if (!row) return { ...k, outcome: 'unknown', from: null, message: `not known under institute ${k.instituteId}` };
  const refused = (message: string): AbandonResult => ({ ...k, outcome: 'refused', from: row.state, message });
  if (row.state === 'abandoned') return { ...k, outcome: 'already_abandoned', from: row.state };
  if (row.state === 'synced') return refused(`it is synced (class ${row.classId}, join link stored): there is nothing to abandon`);
  if (row.classId !== null) {
    return refused(
      `it has class ${row.classId} on the remote (state ${row.state}); abandoning it would leave that class unaccounted for. ` +
        `Let it finish, or \`classroom-sync retry\` it if it failed`,
    );
  }
  if (row.leasedUntil && row.leasedUntil.getTime() > Date.now()) {
    return refused('a worker is syncing it right now; try again once it has stopped (`classroom-sync status` shows its state)');
  }
  if (row.state === 'creating') {
    return refused('an add-class may have been sent and its outcome is not settled yet; wait until it is synced, failed or needs_review');
  }
  return refused(`it changed while being abandoned (now ${row.state}); run the command again`);
}

async function readRows(db: Db, keys: readonly BatchKey[]): Promise<Map<string, RowFacts>> {
  const facts = await mapping.readBatchFacts(db, keys);
  return new Map(facts.map((f) => [keyOf(f.instituteId, f.batchId), { state: f.state, classId: f.classId, leasedUntil: f.leasedUntil }]));
}

/** A waiting or failed job would only show on the dashboard; a locked (running) one cannot be removed and ends by itself. */
async function removeJobs(deps: Deps, keys: readonly BatchKey[]): Promise<void> {
  for (const key of keys) {
    try {
      for (const queue of bothQueues(deps.queue)) await queue.remove(jobIdFor(key));
    } catch (error) {
      // The state change is already committed, and a leftover job finds the batch terminal and stops.
      deps.logger.warn(
        { err: error, batchId: key.batchId },
        'abandoned, but its queued job could not be removed (Redis?); it will find the batch abandoned and stop',
      );
    }
  }
}

const keyOf = (instituteId: string, batchId: string) => JSON.stringify([instituteId, batchId]);
