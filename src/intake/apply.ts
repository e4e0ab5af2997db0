// Changes of recorded batches at intake: an update or a cancellation (or a created event with a
// higher version for a batch already recorded) is applied to its row as it stands (decided again if a
// sync run wrote it meanwhile), its audit line beside it, and the batch's sync job is queued when a run has something to do.
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import type { BatchKey, Db, MappingRow } from '../mapping/index.ts';
import { jobIdFor } from '../sync/keys.ts';
import { queueLaneOf } from '../sync/lanes.ts';
import { renderClassName } from '../sync/names.ts';
import { type SyncQueue, jobName, queueFor, syncJob } from '../sync/queue.ts';
import { withTimeout } from '../support/timeout.ts';
import { planChange } from './changes.ts';
import { type BatchEvent, type FieldProblem, typeOf } from './schema.ts';

export interface ChangeDeps {
  db: Db;
  queue: SyncQueue;
  logger: Logger;
  defaults: { classNameTemplate: string };
  enqueueTimeoutMs?: number;
}

export type ChangeOutcome = { outcome: 'applied' | 'stale'; row: MappingRow; queued: boolean };

/** Applies one change to its recorded batch. Throws when the batch is not recorded (intake checks that first: `unknownTargets`). */
export async function applyBatchChange(deps: ChangeDeps, event: BatchEvent): Promise<ChangeOutcome> {
  const render = (values: mapping.StoredEvent) => renderClassName(deps.defaults.classNameTemplate, values);
  const result = await mapping.applyChange(deps.db, event, (row) => planChange(row, event, render));
  if (result.status === 'missing') throw new Error(`batch ${event.batchId} of institute ${event.instituteId} is not recorded; publish its batch.created first`);
  if (result.status === 'stale') return { outcome: 'stale', row: result.row, queued: false };
  return { outcome: 'applied', row: result.row, queued: await enqueueRun(deps, result.row) };
}

/**
 * A job of its own for this revision: the batch's job may be running right now (BullMQ ignores a
 * second job under a live job's id), and its run may have written its last step before this change.
 * Two jobs of one batch never both act: the lease lets one run at a time, and the other finds the
 * change applied. When Redis cannot take it, the sweep finds the batch (it has work and no job).
 */
async function enqueueRun(deps: ChangeDeps, row: MappingRow): Promise<boolean> {
  if (!mapping.wantsRun(row)) return false;
  const lane = queueLaneOf(row.lane, row.state) === 'under_way' ? 'under_way' : 'live';
  const job = syncJob(row, { lane });
  const target = queueFor(deps.queue, lane);
  try {
    // The dashboard lists it by lane, institute and batch, and as the change it carries.
    const name = jobName(`${job.name} · ${row.cancelledAt ? 'cancel' : 'update'} r${row.revision}`);
    await withTimeout(target.add(name, job.data, { ...job.opts, jobId: `${jobIdFor(row)}-r${row.revision}` }), deps.enqueueTimeoutMs ?? 2_000, 'Redis');
    return true;
  } catch (error) {
    deps.logger.warn({ err: error, batchId: row.batchId }, 'batch change recorded but not queued (Redis unavailable); the sweep will enqueue it');
    return false;
  }
}

/**
 * Updates and cancellations of batches never recorded (nor created earlier in the same list): each
 * refused with its reason, by index. Nothing of a refused event is recorded.
 */
export async function unknownTargets(db: Db, events: readonly BatchEvent[]): Promise<Map<number, FieldProblem[]>> {
  const changes = events.map((event, index) => ({ event, index })).filter(({ event }) => 'type' in event);
  const refused = new Map<number, FieldProblem[]>();
  if (changes.length === 0) return refused;
  const known = new Set(
    (
      await mapping.statesOf(
        db,
        changes.map((c) => c.event),
      )
    ).map(keyOf),
  );
  const createdBefore = new Map<string, number>();
  events.forEach((event, index) => {
    if (!('type' in event) && !createdBefore.has(keyOf(event))) createdBefore.set(keyOf(event), index);
  });
  for (const { event, index } of changes) {
    const created = createdBefore.get(keyOf(event));
    if (known.has(keyOf(event)) || (created !== undefined && created < index)) continue;
    const reason = `is not recorded under institute ${event.instituteId}: a ${typeOf(event)} needs the batch's batch.created first`;
    refused.set(index, [{ field: 'batchId', reason }]);
  }
  return refused;
}

export function keyOf(k: BatchKey): string {
  return `${k.instituteId}\u0000${k.batchId}`;
}
