// Postgres is the source of truth; Redis only holds work in flight. If Redis loses jobs (restart
// without persistence, eviction, a failed enqueue after the row was written), this puts every
// unfinished batch that has no live job back on the queue.
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import { type BatchKey, jobIdFor } from './keys.ts';
import { queueLaneOf } from './lanes.ts';
import type { Queue } from 'bullmq';
import { type Placement, type SyncQueue, bothQueues, queueFor, syncJob } from './queue.ts';

const LIVE_STATES = new Set(['active', 'waiting', 'waiting-children', 'delayed', 'prioritized']);

export interface SweepResult {
  examined: number;
  requeued: number;
}

export interface SweepDeps {
  db: mapping.Db;
  queue: SyncQueue;
  logger: Logger;
}

export interface SweepOptions {
  stuckAfterMs: number;
  /** How many batches of each tier one pass looks at (default 1,000). */
  limit?: number;
}

const TIERS: readonly mapping.StuckTier[] = ['ahead', 'backfill'];

/**
 * A sweep that remembers where it stopped: each pass looks at the next `limit` batches of each tier
 * (batches under way, live and operator work; then the backfill), and starts a tier over once it
 * reached its end. So with more unfinished batches than one pass looks at, every one is reached in a
 * few passes, and a backfill of any size never keeps the sweep from live batches.
 */
export function createSweeper(deps: SweepDeps, options: SweepOptions): () => Promise<SweepResult> {
  const limit = options.limit ?? 1_000;
  const after: Record<mapping.StuckTier, number> = { ahead: 0, backfill: 0 };
  return async () => {
    let examined = 0;
    let requeued = 0;
    for (const tier of TIERS) {
      const rows = await mapping.findStuck(deps.db, { stuckAfterMs: options.stuckAfterMs, tier, afterId: after[tier], limit });
      after[tier] = rows.length < limit ? 0 : (rows.at(-1)?.id ?? 0);
      examined += rows.length;
      for (const row of rows) {
        if (await requeue(deps.queue, row, { lane: queueLaneOf(row.lane, row.state), position: row.position })) requeued += 1;
      }
    }
    if (requeued > 0) deps.logger.warn({ examined, requeued }, 'sweep re-enqueued batches that had no live job');
    return { examined, requeued };
  };
}

/** One pass from the start of each tier (a sweeper of its own). */
export function sweepStuckBatches(deps: SweepDeps, options: SweepOptions): Promise<SweepResult> {
  return createSweeper(deps, options)();
}

/**
 * Puts a batch back on the queue of its lane, in its place (lane and position), unless a live job
 * already exists in either queue: one in the target queue is moved up to the place if it waits
 * behind it. Returns true when it queued one.
 */
export async function requeue(queue: SyncQueue, key: BatchKey, placement: Placement): Promise<boolean> {
  const jobId = jobIdFor(key);
  const target = queueFor(queue, placement.lane);
  const job = syncJob(key, placement);
  const states = await Promise.all(bothQueues(queue).map(async (q) => [q, await q.getJobState(jobId)] as const));
  if (states.some(([, state]) => LIVE_STATES.has(state))) {
    if (LIVE_STATES.has(states.find(([q]) => q === target)?.[1] ?? 'unknown')) await raisePriority(target, jobId, job.opts.priority);
    return false;
  }
  const failedHere = states.find(([q, state]) => q === target && state === 'failed');
  if (failedHere) {
    const failed = await target.getJob(jobId);
    if (failed) {
      await failed.retry('failed', { resetAttemptsMade: true });
      await raisePriority(target, jobId, job.opts.priority);
      return true;
    }
  }
  // A finished job of this batch, in either queue, would keep the id from being used again.
  for (const [q, state] of states) if (state === 'completed' || state === 'failed') await q.remove(jobId);
  await target.add(job.name, job.data, job.opts);
  return true;
}

/** Moves a queued job up to `priority` if it waits behind it (never down: it may be under way). */
async function raisePriority(queue: Queue, jobId: string, priority: number): Promise<void> {
  const job = await queue.getJob(jobId);
  if (job && (job.opts.priority ?? 0) > priority) await job.changePriority({ priority });
}
