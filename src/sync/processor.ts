// The one place where a sync run's outcome becomes BullMQ behaviour.
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import { and, eq, notInArray, sql } from 'drizzle-orm';
import { appendEvents } from '../audit/events.ts';
import type { Db } from '../db/client.ts';
import { type BatchRow, type BatchState, TERMINAL_STATES, batchClasses } from '../db/schema/index.ts';
import { DeferError, LeaseLostError, PermanentSyncError } from './errors.ts';
import { type SyncDeps, runBatch } from './machine.ts';
import type { SyncJobData, SyncResult } from './queue.ts';

export function createSyncProcessor(deps: SyncDeps) {
  return async function processSyncJob(job: Job<SyncJobData, SyncResult>, token?: string): Promise<SyncResult> {
    const key = { instituteId: job.data.instituteId, batchId: job.data.batchId };
    const log = deps.logger.child({ batchId: key.batchId, jobId: job.id });
    const attempt = job.attemptsMade + 1;
    try {
      const outcome = await runBatch({ ...deps, logger: log }, key, attempt);
      return { state: outcome.state, classId: outcome.classId };
    } catch (error) {
      if (error instanceof DeferError || error instanceof LeaseLostError) {
        // Not a failed attempt: wait and run again (lease elsewhere, settle delay, 429).
        const delay = error instanceof DeferError ? error.delayMs : 1_000;
        await job.moveToDelayed(Date.now() + delay, token);
        throw new DelayedError(error.message);
      }
      if (error instanceof PermanentSyncError) throw new UnrecoverableError(error.message);
      if (attempt >= (job.opts.attempts ?? 1)) {
        const failed = await markExhausted(deps.db, key, error, { attempt, workerId: deps.workerId });
        log.warn({ attempt, from: failed?.from, to: 'failed', classId: failed?.row.classId ?? null }, 'attempts exhausted; batch failed');
        if (failed) deps.onTransition?.({ key, from: failed.from, to: 'failed', row: failed.row });
      }
      throw error;
    }
  };
}

/** How one run of a sync job ended, as the queue sees it (metrics count these). */
export type SyncJobResult = 'completed' | 'deferred' | 'retrying' | 'failed';

/** Classifies what `processSyncJob` threw (or `undefined` when it returned) for `job`. */
export function syncJobResult(job: Job<SyncJobData, SyncResult>, thrown?: unknown): SyncJobResult {
  if (thrown === undefined) return 'completed';
  if (thrown instanceof DelayedError) return 'deferred';
  if (thrown instanceof UnrecoverableError) return 'failed';
  return job.attemptsMade + 1 >= (job.opts.attempts ?? 1) ? 'failed' : 'retrying';
}

/** The last attempt failed: record `failed` with the last error (a later `retry` resumes safely). */
async function markExhausted(
  db: Db,
  key: { instituteId: string; batchId: string },
  error: unknown,
  context: { attempt: number; workerId: string },
): Promise<{ from: BatchState; row: BatchRow } | undefined> {
  const message = error instanceof Error ? error.message : String(error);
  return db.transaction(async (tx) => {
    const [updated] = await tx
    .update(batchClasses)
    .set({ state: 'failed', failedAt: sql`now()`, lastError: `attempts exhausted: ${message}`, updatedAt: sql`now()` })
    .where(
      and(
        eq(batchClasses.instituteId, key.instituteId),
        eq(batchClasses.batchId, key.batchId),
        notInArray(batchClasses.state, [...TERMINAL_STATES]),
      ),
    )
    // A sub-select in RETURNING reads the snapshot from before this UPDATE: the state we left.
    // (Spelled out: drizzle renders the column unqualified here, which the sub-select would capture.)
    .returning({ row: batchClasses, from: sql<BatchState>`(select b.state from batch_classes b where b.id = batch_classes.id)` });
    if (updated) {
      await appendEvents(tx, updated.row.id, [
        { type: 'transition', fromState: updated.from, toState: 'failed', classId: updated.row.classId, error: updated.row.lastError, ...context },
      ]);
    }
    return updated;
  });
}
