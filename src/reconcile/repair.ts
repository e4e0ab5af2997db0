// The only changes a pass makes. None can create a second class or delete one:
//   stuck                  re-enqueue (the state machine resumes from its last recovery point)
//   link_missing           back to `created`, then re-enqueue: edit-class (idempotent) and get-class run again
//   needs_review_resolved  store the single safe candidate as the ClassID (state `created`), then re-enqueue
//   name_drift             (RECONCILE_REPAIR_NAMES) record an edit back to the class name, then re-enqueue
//   cancelled_visible      (CLASSROOM_ARCHIVE_ON_CANCEL) record that the class is to be archived again, then re-enqueue
// The last two never call edit-class here: a sync run renaming the same batch would race it. The
// batch's own run makes the edit, under its lease, like any change the integrator sends.
// Each update is one set-based statement guarded by the state it was classified in, so a row that a
// sync run moved in the meantime is left alone (counted as skipped). The same statement appends a
// `repair` event to each changed batch's audit trail (batch_events), so the two never disagree.
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import type { Db } from '../mapping/index.ts';
import type { BatchKey } from '../sync/keys.ts';
import { queueLaneOf } from '../sync/lanes.ts';
import type { Placement, SyncQueue } from '../sync/queue.ts';
import { requeue } from '../sync/sweep.ts';
import { eachLimited } from './mappings.ts';
import type { Finding, RepairSummary } from './types.ts';

export interface RepairInput {
  stuck: readonly Finding[];
  linkMissing: readonly Finding[];
  adopt: readonly Finding[];
  /** name_drift and cancelled_visible findings to repair (those the settings allow). */
  requestEdit: readonly Finding[];
}

export interface RepairOutcome extends RepairSummary {
  /** Each adoption, for the run record (an operator may want to see which classes were adopted). */
  adoptions: { instituteId: string; batchId: string; classId: string }[];
}

export async function repair(deps: { db: Db; queue: SyncQueue; logger: Logger }, input: RepairInput, runId: number): Promise<RepairOutcome> {
  const reset = await mapping.resetLinkSteps(
    deps.db,
    input.linkMissing.map((f) => ({ rowId: storedBatch(f).rowId, reason: f.detail ?? '' })),
    runId,
  );
  const adopted = await mapping.adoptCandidates(
    deps.db,
    input.adopt.map((f) => ({ rowId: storedBatch(f).rowId, classId: withClass(f).classId })),
    runId,
  );
  const edits = await mapping.requestClassEdit(deps.db, input.requestEdit.map(editRequestOf), runId);
  // Reset and adopted batches have a class: they are under way. A stuck one goes to the operator lane
  // (under way if its add-class was sent), as `recordRequeues` stores it. An edit request is operator
  // work on a finished batch, in the lane `requestClassEdit` stored.
  const underWay: Placement = { lane: 'under_way' };
  const operator: Placement = { lane: 'operator' };
  const keys: (BatchKey & { rowId?: number; placement: Placement })[] = [
    ...input.stuck.map(keyOf),
    ...reset.map((k) => ({ ...k, placement: underWay })),
    ...adopted.map((k) => ({ ...k, placement: underWay })),
    ...edits.map(({ instituteId, batchId }) => ({ instituteId, batchId, placement: operator })),
  ];
  let requeued = 0;
  const requeuedStuck: number[] = [];
  await eachLimited(keys, 16, async (key) => {
    if (!(await requeue(deps.queue, key, key.placement))) return;
    requeued += 1;
    if (key.rowId !== undefined) requeuedStuck.push(key.rowId);
  });
  await mapping.recordRequeues(deps.db, requeuedStuck, runId);
  const skipped = input.linkMissing.length - reset.length + (input.adopt.length - adopted.length) + (input.requestEdit.length - edits.length);
  if (skipped > 0) deps.logger.info({ skipped }, 'some repairs were skipped: the batch changed since it was classified');
  return { requeued, linkStepsReset: reset.length, adopted: adopted.length, editsRequested: edits.length, skipped, adoptions: adopted };
}

/** A name_drift or cancelled_visible finding as the edit it asks for, guarded by the revision and class the pass read. */
function editRequestOf(f: Finding): mapping.ClassEditRequest {
  const { rowId } = storedBatch(f);
  const { classId } = withClass(f);
  if (f.revision === undefined) throw new Error(`a ${f.category} finding for batch ${f.batchId} carries no revision; cannot repair it`);
  if (f.category === 'cancelled_visible') return { rowId, classId, revision: f.revision, kind: 'archive' };
  if (f.category === 'name_drift' && f.listedName !== undefined) return { rowId, classId, revision: f.revision, kind: 'rename', listedName: f.listedName };
  throw new Error(`a ${f.category} finding for batch ${f.batchId} is not an edit to request`);
}

/** A stuck finding's key carries its row id, so its re-enqueue can be written to the audit trail. */
const keyOf = (f: Finding): BatchKey & { rowId?: number; placement: Placement } => {
  const { rowId, batchId } = storedBatch(f);
  const lane = f.state ? queueLaneOf('operator', f.state) : 'operator';
  return { instituteId: f.instituteId, batchId, rowId, placement: { lane } };
};

/**
 * The stored batch a finding is about. Every repairable category (and every link check) is about
 * one; a finding without its row is a classification bug, and stops the pass saying so.
 */
export function storedBatch(f: Finding): { rowId: number; batchId: string } {
  if (f.rowId === null || f.batchId === null) throw new Error(`a ${f.category} finding of institute ${f.instituteId} has no stored batch; cannot repair it`);
  return { rowId: f.rowId, batchId: f.batchId };
}

/** The ClassID a finding names (adopt, link check), or an error saying it has none. */
export function withClass(f: Finding): { classId: string } {
  if (f.classId === null) throw new Error(`a ${f.category} finding for batch ${f.batchId} names no class; cannot repair it`);
  return { classId: f.classId };
}
