// The one place where a sync run's outcome becomes BullMQ behaviour: the kind of failure decides
// (`queueAction`), nothing else. Lanes meet the rate limit here too: a job of a lower lane (operator,
// backfill; they run in the background queue's own worker slots) takes its first call's slot
// before its run starts, without touching PostgreSQL while it waits for one.
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import { BreakerOpenError } from '../ratelimit/limiter.ts';
import { type Failure, SyncError, failureOf, queueAction } from './errors.ts';
import { type QueueLane, laneOfPriority, priorityOf, queueLaneOf } from './lanes.ts';
import { runBatch } from './machine.ts';
import type { SyncJobData, SyncResult } from './queue.ts';
import type { ProcessorDeps, SyncAccount, SyncDeps } from './types.ts';

type SyncJob = Job<SyncJobData, SyncResult>;

/** How soon a job comes back while the credentials breaker is open (its process pauses meanwhile). */
const BREAKER_RETRY_MS = 1_000;

/** How soon a batch of an institute no account serves is looked at again (a restart may add one). */
const NO_ACCOUNT_RETRY_MS = 60_000;

/** SYNC_BACKOFF_MAX's default: how often a batch waits out an outage once its attempts are used. */
const DEFAULT_OUTAGE_RETRY_MS = 5 * 60_000;

/** How long a lower lane's job waits in place for a rate-limit slot before it goes back to wait. */
const IN_PLACE_MS = 5_000;

export function createSyncProcessor(processorDeps: ProcessorDeps) {
  const unserved = warnOnce(processorDeps.logger);
  return async function processSyncJob(job: SyncJob, token?: string): Promise<SyncResult> {
    const key = { instituteId: job.data.instituteId, batchId: job.data.batchId };
    const account = processorDeps.accountFor(key.instituteId);
    if (!account) {
      unserved(key.instituteId);
      return wait(job, token, NO_ACCOUNT_RETRY_MS, `no account serves institute ${key.instituteId}`);
    }
    // Known refused here: back to wait before touching PostgreSQL (one process probes meanwhile).
    if (account.credentials.isRefused()) return wait(job, token, account.credentials.retryInMs(), `the API key of account ${account.name} is refused`);
    const { accountFor: _, ...rest } = processorDeps;
    const deps: SyncDeps = {
      ...rest,
      classroom: account.classroom,
      limiter: account.limiter,
      credentials: account.credentials,
      lagMonitor: account.lagMonitor,
    };
    const log = deps.logger.child({ batchId: key.batchId, instituteId: key.instituteId, jobId: job.id });
    const attempt = job.attemptsMade + 1;
    const slot = await slotForLane(account, job, token, processorDeps.sharedSlots === true);
    try {
      const outcome = await runBatch({ ...deps, logger: log }, key, attempt, slot ? { firstSlot: slot.ready } : {});
      return { state: outcome.state, classId: outcome.classId };
    } catch (error) {
      const failure = failureOf(error);
      const action = queueAction(failure.kind);
      if (action !== 'fail') await promoteIfUnderWay(job, error, log);
      switch (action) {
        case 'delay':
          // Not a failed attempt: run again later (lease elsewhere, settle delay, read lag, 429, refused key).
          await job.moveToDelayed(Date.now() + (failure.delayMs ?? 1_000), token);
          throw new DelayedError(failure.message);
        case 'fail':
          throw new UnrecoverableError(failure.message);
        case 'retry':
          if (attempt >= (job.opts.attempts ?? 1)) {
            if (isOutage(failure)) return outlastOutage(job, token, failure, log, processorDeps.outageRetryMs ?? DEFAULT_OUTAGE_RETRY_MS);
            await recordExhausted(deps, key, failure, attempt, log);
          }
          throw new Error(failure.message, { cause: error });
      }
    }
  };
}

/** The lane a job waits in: stored in its data when queued, else read from its priority. */
export function laneOfJob(job: SyncJob): QueueLane {
  return job.data.lane ?? laneOfPriority(job.opts.priority);
}

/**
 * For a job of a lower lane (or, with several accounts, a live one): the slot its first call will
 * use (`ready` resolves when it is due). Alone, a lower lane's job waits for one in place, holding
 * only a background worker slot, and asks again when told; after IN_PLACE_MS without one it goes
 * back to wait (and this throws DelayedError), so the background queue's batches under way and a
 * shutdown are never held up for long. With several accounts it goes back to wait at once: the
 * worker slot may serve another account meanwhile.
 */
async function slotForLane(deps: SyncAccount, job: SyncJob, token: string | undefined, shared: boolean): Promise<{ ready: Promise<number> } | undefined> {
  const lane = laneOfJob(job);
  if (lane !== 'operator' && lane !== 'backfill' && !(shared && lane === 'live')) return undefined;
  const giveUpAt = performance.now() + (shared ? 0 : IN_PLACE_MS);
  let retryInMs: number;
  for (;;) {
    try {
      const reservation = await deps.limiter.reserve(lane);
      // Wrapped: an async function would wait for a promise it returned instead of handing it over.
      if (reservation.granted) return { ready: slotDue(reservation.waitMs) };
      retryInMs = reservation.retryInMs;
    } catch (error) {
      if (!(error instanceof BreakerOpenError)) throw error;
      deps.credentials.refused();
      retryInMs = BREAKER_RETRY_MS;
      break;
    }
    if (performance.now() + retryInMs > giveUpAt) break;
    await new Promise((resolve) => setTimeout(resolve, retryInMs));
  }
  await job.moveToDelayed(Date.now() + retryInMs, token);
  throw new DelayedError(`the ${lane} lane waits for a rate-limit slot`);
}

/** Resolves when a slot `waitMs` away comes due, with the time it did (`performance.now()`), however late the timer fires. */
function slotDue(waitMs: number): Promise<number> {
  const due = performance.now() + waitMs;
  return new Promise((resolve) => setTimeout(() => resolve(due), waitMs));
}

/** Back to wait for `ms` without using an attempt or touching the batch. */
async function wait(job: SyncJob, token: string | undefined, ms: number, why: string): Promise<never> {
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError(`${why}; waiting ${ms} ms`);
}

/** One warning per institute no account serves, per process and ten minutes. */
function warnOnce(logger: Logger): (instituteId: string) => void {
  const warned = new Map<string, number>();
  return (instituteId) => {
    const last = warned.get(instituteId);
    if (last !== undefined && performance.now() - last < 600_000) return;
    warned.set(instituteId, performance.now());
    logger.warn(
      { instituteId },
      `no account serves institute ${instituteId}: its batches wait, unchanged; add it to an account's instituteIds in CLASSROOM_ACCOUNTS_FILE (or set CLASSROOM_INSTITUTE_ID) and restart`,
    );
  };
}

/** A batch whose add-class was sent goes ahead of everything new: its job moves to the top lane. */
async function promoteIfUnderWay(job: SyncJob, error: unknown, log: Logger): Promise<void> {
  const state = error instanceof SyncError ? error.batchState : undefined;
  if (!state || laneOfJob(job) === 'under_way' || queueLaneOf('live', state) !== 'under_way') return;
  try {
    await job.changePriority({ priority: priorityOf('under_way') });
    await job.updateData({ ...job.data, lane: 'under_way' });
  } catch (promoteError) {
    // It still runs again, in its old place; the sweep or its next run moves it up.
    log.warn({ err: promoteError }, 'could not move the job of a batch under way to the front of the queue');
  }
}

/**
 * Failures that say the remote is unavailable, not that anything is wrong with the batch: no request
 * got through, or no readable answer came back. However long that lasts, the batch is not written
 * off for it. (An unreachable PostgreSQL is `database_unavailable`, which never uses an attempt.)
 */
function isOutage(failure: Failure): boolean {
  return failure.kind === 'not_sent' || failure.kind === 'outcome_unknown' || failure.kind === 'unconfirmed_refusal';
}

/**
 * Attempts ran out on an outage: rather than `failed` (an operator's `retry` later), the batch keeps
 * its state and its job comes back every `everyMs` (jittered, so an outage's backlog does not return
 * at once), using no attempt, until the remote answers. Its last error stays visible in `status`.
 */
async function outlastOutage(job: SyncJob, token: string | undefined, failure: Failure, log: Logger, everyMs: number): Promise<never> {
  const ms = Math.round(everyMs * (0.5 + Math.random() / 2));
  log.warn(
    { kind: failure.kind, reason: failure.reason, retryInMs: ms },
    `attempts used up by an outage, not by the batch: trying again in ${Math.round(ms / 1000)} s rather than failing it (${failure.message})`,
  );
  return wait(job, token, ms, 'waiting out an outage');
}

/** The last attempt failed: the batch is `failed` with the last error (a later `retry` resumes safely). */
async function recordExhausted(deps: SyncDeps, key: mapping.BatchKey, failure: Failure, attempt: number, log: Logger): Promise<void> {
  const failed = await mapping.markExhausted(deps.db, key, { message: failure.message, kind: failure.kind }, { attempt, workerId: deps.workerId });
  log.warn(
    { attempt, kind: failure.kind, reason: failure.reason, from: failed?.from, to: 'failed', classId: failed?.row.classId ?? null },
    'attempts exhausted; batch failed',
  );
  if (failed) deps.onTransition?.({ key, from: failed.from, to: 'failed', row: failed.row });
}

/** How one run of a sync job ended, as the queue sees it (metrics count these). */
export type SyncJobResult = 'completed' | 'deferred' | 'retrying' | 'failed';

/** Classifies what `processSyncJob` threw (or `undefined` when it returned) for `job`. */
export function syncJobResult(job: SyncJob, thrown?: unknown): SyncJobResult {
  if (thrown === undefined) return 'completed';
  if (thrown instanceof DelayedError) return 'deferred';
  if (thrown instanceof UnrecoverableError) return 'failed';
  return job.attemptsMade + 1 >= (job.opts.attempts ?? 1) ? 'failed' : 'retrying';
}
