// How long a failed sync job waits before its next attempt. Backoff belongs to the step: the wait
// grows with the failures in a row of the step the batch is stuck on, not with every failure of the
// batch's life, so one late 503 on the read after a rough add-class waits about SYNC_BACKOFF_BASE,
// not 2^n times it. The attempts limit is BullMQ's and still counts every failure.
//
// `tellQueue` (processor.ts) counts a failure that BullMQ is about to retry into the job's data
// (`countStepFailure`); BullMQ then asks the worker's backoff strategy (`stepBackoff`), which reads it.
import type { Job } from 'bullmq';
import { retryAfterOf } from '../classroom/errors.ts';
import type { Logger } from '../logging/logger.ts';
import { RunStoppedError, failureOf } from './errors.ts';
import { BEFORE_RUN, type StepFailures, type SyncJobData, type SyncResult } from './queue.ts';

/**
 * Capped exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff and
 * Jitter"): spreads retries of a fleet that failed together instead of retrying in lockstep.
 */
export function fullJitterBackoff(attemptsMade: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attemptsMade - 1));
  return Math.floor(random() * ceiling);
}

export interface BackoffSettings {
  /** SYNC_BACKOFF_BASE: the ceiling of a step's first failure's wait. */
  baseMs: number;
  /** SYNC_BACKOFF_MAX: no wait is longer, a Retry-After included. */
  maxMs: number;
}

/**
 * The wait before a failed job's next attempt: full jitter over the failures in a row of its step
 * (`stepFailures.n`), never shorter than the Retry-After the remote sent with the failure (itself
 * capped at `maxMs`). A job with no count stored (one whose failure was not counted) falls back to
 * `attemptsMade`, BullMQ's count of every failure, as before backoff belonged to the step.
 */
export function stepBackoff(job: { data: SyncJobData } | undefined, attemptsMade: number, settings: BackoffSettings, random = Math.random): number {
  const counted = job?.data.stepFailures;
  const jittered = fullJitterBackoff(counted?.n ?? attemptsMade, settings.baseMs, settings.maxMs, random);
  return Math.max(jittered, Math.min(counted?.retryAfterMs ?? 0, settings.maxMs));
}

/**
 * Stores this failure's step in the job's data: one more in a row when the job's previous failure
 * was in the same step and of the same kind (a 503 after PostgreSQL was unreachable is the remote's
 * first), else the first. The step is the batch's state the run stopped in (a run
 * that held the lease throws a RunStoppedError), or BEFORE_RUN.
 *
 * A step that succeeds resets nothing: the batch then moves to another state, so the next failure
 * is of another step and counts from 1. (A batch that comes back to a state it failed in before,
 * `creating` after its add-class was ruled out, or `created` again after a join link that did not
 * stick, goes on counting there: the step failed before and the wait is still capped.)
 *
 * A count that cannot be stored (Redis failed) must not lose the job, whose failure BullMQ records
 * next: this attempt's wait falls back to BullMQ's count of every failure, as before.
 */
export async function countStepFailure(
  job: Pick<Job<SyncJobData, SyncResult>, 'data' | 'attemptsMade' | 'updateData'>,
  error: unknown,
  log: Logger,
): Promise<void> {
  const step = error instanceof RunStoppedError ? error.batchState : BEFORE_RUN;
  const { kind } = failureOf(error);
  const previous = job.data.stepFailures;
  const retryAfterMs = retryAfterOf(error);
  const count = (n: number): StepFailures => ({ step, kind, n, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
  // Never more in a row than BullMQ's failures of this job since it was (re)started: an operator's
  // retry resets those (resetAttemptsMade), and the count the job kept from before is not this step's.
  const inRow = previous?.step === step && previous.kind === kind ? Math.min(previous.n, job.attemptsMade) : 0;
  const data = { ...job.data, stepFailures: count(inRow + 1) };
  try {
    await job.updateData(data);
  } catch (updateError) {
    log.warn({ err: updateError, step }, 'could not store the failures of the step in the job; its backoff counts every failure of the job instead');
    // BullMQ set job.data before its write failed; the backoff strategy reads this object, not Redis.
    job.data = { ...data, stepFailures: count(job.attemptsMade + 1) };
  }
}
