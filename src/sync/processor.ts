// The one place where a sync job's end becomes BullMQ behaviour. Whatever stopped it (no account
// serves its institute, a refused key, no rate-limit slot for its lane yet, or its run) is an
// error; `failureOf` classifies it into one kind and `queueAction` maps the kind to what the queue
// does (src/sync/errors.ts); `tellQueue` below carries that out. Lanes meet the rate limit here too: a
// job of a lower lane (operator, backfill; they run in the background queue's own worker slots)
// takes its first call's slot before its run starts, without touching PostgreSQL while it waits.
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import { BreakerOpenError } from '../ratelimit/errors.ts';
import type { Reservation } from '../ratelimit/limiter.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';
import { countStepFailure } from './backoff.ts';
import { DeferError, type Failure, RunStoppedError, SyncError, failureOf, queueAction } from './errors.ts';
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
  const clock = processorDeps.clock ?? monotonicClock;
  const unserved = warnOnce(processorDeps.logger, clock);
  return async function processSyncJob(job: SyncJob, token?: string): Promise<SyncResult> {
    const key = { instituteId: job.data.instituteId, batchId: job.data.batchId };
    const log = processorDeps.logger.child({ batchId: key.batchId, instituteId: key.instituteId, jobId: job.id });
    const attempt = job.attemptsMade + 1;
    try {
      const account = accountFor(processorDeps, key.instituteId, unserved);
      const { accountFor: _, ...rest } = processorDeps;
      const deps: SyncDeps = {
        ...rest,
        logger: log,
        classroom: account.classroom,
        limiter: account.limiter,
        credentials: account.credentials,
        lagMonitor: account.lagMonitor,
        listings: account.listings,
      };
      const slot = await slotForLane(account, job, processorDeps.sharedSlots === true, clock);
      // On the last attempt the run itself records a failure that will not be retried, under its lease.
      const lastAttempt = attempt >= (job.opts.attempts ?? 1);
      const outcome = await runBatch(deps, key, attempt, { lastAttempt, ...(slot ? { firstSlot: slot.ready } : {}) });
      return { state: outcome.state, classId: outcome.classId };
    } catch (error) {
      return tellQueue({ job, token, attempt, key, log, deps: processorDeps }, error);
    }
  };
}

/**
 * The account serving the institute, known not to be refused. Otherwise the job goes back to wait
 * before touching PostgreSQL (one process probes a refused key meanwhile).
 */
function accountFor(deps: ProcessorDeps, instituteId: string, unserved: (instituteId: string) => void): SyncAccount {
  const account = deps.accountFor(instituteId);
  if (!account) {
    unserved(instituteId);
    return defer(NO_ACCOUNT_RETRY_MS, `no account serves institute ${instituteId}`, 'no_account', 'no_account');
  }
  if (account.credentials.isRefused()) {
    return defer(account.credentials.retryInMs(), `the API key of account ${account.name} is refused`, 'credentials_refused', 'breaker_open');
  }
  return account;
}

/** Back to wait for `ms` without using an attempt or touching the batch. */
function defer(ms: number, why: string, kind: 'no_account' | 'credentials_refused' | 'slot_wait', reason: string): never {
  throw new DeferError(ms, `${why}; waiting ${ms} ms`, kind, reason);
}

interface StoppedJob {
  job: SyncJob;
  token: string | undefined;
  attempt: number;
  key: mapping.BatchKey;
  log: Logger;
  deps: Pick<ProcessorDeps, 'db' | 'workerId' | 'onTransition' | 'outageRetryMs'>;
}

/** What the queue does with a job that stopped: decided by its failure's kind alone (`queueAction`). */
async function tellQueue({ job, token, attempt, key, log, deps }: StoppedJob, error: unknown): Promise<never> {
  const failure = failureOf(error);
  const action = queueAction(failure.kind);
  if (action !== 'fail' && error instanceof RunStoppedError) await promoteIfUnderWay(job, error.batchState, log);
  switch (action) {
    case 'delay':
      // Not a failed attempt: run again later (lease elsewhere, settle delay, read lag, 429, refused key, no slot).
      await job.moveToDelayed(Date.now() + (failure.delayMs ?? 1_000), token);
      throw new DelayedError(failure.message);
    case 'fail':
      throw new UnrecoverableError(failure.message);
    case 'retry':
    case 'outlast':
      if (attempt < (job.opts.attempts ?? 1)) {
        // BullMQ retries it after the backoff of its step, which reads this count (src/sync/backoff.ts).
        await countStepFailure(job, error, log);
      } else if (action === 'outlast') {
        return outlastOutage(job, token, failure, log, deps.outageRetryMs ?? DEFAULT_OUTAGE_RETRY_MS);
      } else if (!(error instanceof RunStoppedError)) {
        // A run that held the lease recorded its last attempt itself (failed, or needs_review in doubt).
        await recordExhausted(deps, key, failure, attempt, log);
      }
      throw new Error(failure.message, { cause: error });
  }
}

/** The lane a job waits in: stored in its data when queued, else read from its priority. */
export function laneOfJob(job: SyncJob): QueueLane {
  return job.data.lane ?? laneOfPriority(job.opts.priority);
}

/**
 * For a job of a lower lane (or, with several accounts, a live one): the slot its first call will
 * use (`ready` resolves when it is due). Alone, a lower lane's job waits for one in place, holding
 * only a background worker slot, and asks again when told; after IN_PLACE_MS without one it goes
 * back to wait (a `slot_wait` DeferError), so the background queue's batches under way and a
 * shutdown are never held up for long. With several accounts it goes back to wait at once: the
 * worker slot may serve another account meanwhile.
 */
async function slotForLane(deps: SyncAccount, job: SyncJob, shared: boolean, clock: Clock): Promise<{ ready: Promise<number> } | undefined> {
  const lane = laneOfJob(job);
  if (lane !== 'operator' && lane !== 'backfill' && !(shared && lane === 'live')) return undefined;
  const giveUpAt = clock.now() + (shared ? 0 : IN_PLACE_MS);
  for (;;) {
    const reservation = await reserve(deps, lane);
    // Wrapped: an async function would wait for a promise it returned instead of handing it over.
    if (reservation.granted) return { ready: slotDue(reservation.waitMs) };
    const { retryInMs } = reservation;
    if (clock.now() + retryInMs > giveUpAt) return defer(retryInMs, `the ${lane} lane waits for a rate-limit slot`, 'slot_wait', 'lane_deferred');
    await clock.sleep(retryInMs);
  }
}

/**
 * One ask for a slot. While the key is known to be refused the job waits for it, like any job of a
 * refused account; a limiter that cannot be asked (Redis failed) is an outage: nothing was sent.
 */
async function reserve(deps: SyncAccount, lane: QueueLane): Promise<Reservation> {
  try {
    return await deps.limiter.reserve(lane);
  } catch (error) {
    if (!(error instanceof BreakerOpenError)) {
      throw new SyncError('not_sent', 'limiter_unavailable', `no rate-limit slot could be asked for: ${(error as Error).message}`, { cause: error });
    }
    deps.credentials.refused();
    return defer(BREAKER_RETRY_MS, 'the API key is refused (the credentials breaker is open)', 'credentials_refused', 'breaker_open');
  }
}

/**
 * Resolves when a slot `waitMs` away comes due, with the time it did (`performance.now()`), however
 * late the timer fires. Not the run's clock: src/classroom/call.ts compares it with its own.
 */
function slotDue(waitMs: number): Promise<number> {
  const due = performance.now() + waitMs;
  return new Promise((resolve) => setTimeout(() => resolve(due), waitMs));
}

/** One warning per institute no account serves, per process and ten minutes. */
function warnOnce(logger: Logger, clock: Clock): (instituteId: string) => void {
  const warned = new Map<string, number>();
  return (instituteId) => {
    const last = warned.get(instituteId);
    if (last !== undefined && clock.now() - last < 600_000) return;
    warned.set(instituteId, clock.now());
    logger.warn(
      { instituteId },
      `no account serves institute ${instituteId}: its batches wait, unchanged; add it to an account's instituteIds in CLASSROOM_ACCOUNTS_FILE (or set CLASSROOM_INSTITUTE_ID) and restart`,
    );
  };
}

/** A batch whose add-class was sent goes ahead of everything new: its job moves to the top lane. */
async function promoteIfUnderWay(job: SyncJob, state: mapping.BatchState, log: Logger): Promise<void> {
  if (laneOfJob(job) === 'under_way' || queueLaneOf('live', state) !== 'under_way') return;
  try {
    await job.changePriority({ priority: priorityOf('under_way') });
    await job.updateData({ ...job.data, lane: 'under_way' });
  } catch (promoteError) {
    // It still runs again, in its old place; the sweep or its next run moves it up.
    log.warn({ err: promoteError }, 'could not move the job of a batch under way to the front of the queue');
  }
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
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError(`waiting out an outage; waiting ${ms} ms`);
}

/**
 * The last attempt failed before its run held the lease: the batch is `failed` with the last error
 * (a later `retry` resumes safely), or `needs_review` when it may have a class; unless a runner holds it.
 */
async function recordExhausted(deps: StoppedJob['deps'], key: mapping.BatchKey, failure: Failure, attempt: number, log: Logger): Promise<void> {
  const failed = await mapping.markExhausted(deps.db, key, { message: failure.message, kind: failure.kind }, { attempt, workerId: deps.workerId });
  log.warn(
    { attempt, kind: failure.kind, reason: failure.reason, from: failed?.from, to: failed?.row.state, classId: failed?.row.classId ?? null },
    failed ? `attempts exhausted; batch ${failed.row.state}` : 'attempts exhausted; the batch is held by another run, which decides',
  );
  if (failed) deps.onTransition?.({ key, from: failed.from, to: failed.row.state, row: failed.row });
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
