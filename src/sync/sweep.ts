// Postgres is the source of truth; Redis only holds work in flight. If Redis loses jobs (restart
// without persistence, eviction, a failed enqueue after the row was written), this puts every
// unfinished batch that has no live job back on the queue.
import { and, asc, isNull, lt, notInArray, or, sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { TERMINAL_STATES, batchClasses } from '../db/schema/index.ts';
import type { Logger } from '../logger.ts';
import { jobIdFor } from './keys.ts';
import { type SyncQueue, syncJob } from './queue.ts';

const LIVE_STATES = new Set(['active', 'waiting', 'waiting-children', 'delayed', 'prioritized']);

export interface SweepResult {
  examined: number;
  requeued: number;
}

export async function sweepStuckBatches(
  deps: { db: Db; queue: SyncQueue; logger: Logger },
  options: { stuckAfterMs: number; limit?: number },
): Promise<SweepResult> {
  const rows = await deps.db
    .select({ instituteId: batchClasses.instituteId, batchId: batchClasses.batchId })
    .from(batchClasses)
    .where(
      and(
        notInArray(batchClasses.state, [...TERMINAL_STATES]),
        lt(batchClasses.updatedAt, sql`now() - (${options.stuckAfterMs} * interval '1 millisecond')`),
        or(isNull(batchClasses.leaseExpiresAt), lt(batchClasses.leaseExpiresAt, sql`now()`)),
      ),
    )
    .orderBy(asc(batchClasses.updatedAt))
    .limit(options.limit ?? 1_000);
  let requeued = 0;
  for (const key of rows) {
    if (await requeue(deps.queue, key)) requeued += 1;
  }
  if (requeued > 0) deps.logger.warn({ examined: rows.length, requeued }, 'sweep re-enqueued batches that had no live job');
  return { examined: rows.length, requeued };
}

/** Puts a batch back on the queue unless a live job already exists. Returns true when it did. */
export async function requeue(queue: SyncQueue, key: { instituteId: string; batchId: string }): Promise<boolean> {
  const jobId = jobIdFor(key);
  const state = await queue.getJobState(jobId);
  if (LIVE_STATES.has(state)) return false;
  if (state === 'failed') {
    const job = await queue.getJob(jobId);
    if (job) {
      await job.retry('failed', { resetAttemptsMade: true });
      return true;
    }
  }
  if (state === 'completed' || state === 'failed') await queue.remove(jobId);
  const job = syncJob(key);
  await queue.add(job.name, job.data, job.opts);
  return true;
}
