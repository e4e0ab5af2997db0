// `classroom-sync worker`: runs sync jobs, and sweeps Postgres for batches that lost their job.
import { type MinimalJob, Worker } from 'bullmq';
import { UNMETERED, createRemoteClient } from '../accounts/clients.ts';
import type { Telemetry } from 'bullmq';
import type { Remotes } from '../accounts/remotes.ts';
import type { Database } from '../db/client.ts';
import type { Logger } from '../logging/logger.ts';
import { type Redis, createRedis } from '../redis/connection.ts';
import type { Clock } from '../support/clock.ts';
import { within } from '../support/timeout.ts';
import { stepBackoff } from './backoff.ts';
import { createCredentialsGuard } from './credentials.ts';
import { accountLagMonitor } from './lag-monitor.ts';
import { accountListings } from './institute-listing.ts';
import type { Transition } from './machine.ts';
import type { SyncWorkerSettings } from './settings.ts';
import type { ProcessorDeps, SyncAccount } from './types.ts';
import { type SyncJobResult, createSyncProcessor, syncJobResult } from './processor.ts';
import { BACKGROUND_QUEUE, BACKOFF_STRATEGY, SYNC_QUEUE, type SyncJobData, type SyncQueue, type SyncResult } from './queue.ts';
import { createSweeper } from './sweep.ts';
import { repeatTasks } from './housekeeping.ts';
import { labelRuns } from './job-span.ts';
import { compactCounts, outbox, pruneEvents } from '../mapping/index.ts';

export interface SyncWorker {
  /** The workers of the sync queue: batches under way and live ones. */
  worker: Worker<SyncJobData, SyncResult>;
  /** The workers of the background queue: operator work and backfill. */
  background: Worker<SyncJobData, SyncResult>;
  /** Runs one sweep now (also runs every SYNC_SWEEP_EVERY). */
  sweep(): Promise<{ examined: number; requeued: number }>;
  /** Stops taking jobs, lets active ones finish within `graceMs`, then closes. */
  close(graceMs?: number): Promise<void>;
}

/** What the sync workers use (a Runtime has all of it). */
export interface SyncWorkerDeps {
  /** The worker's settings (src/sync/settings.ts), built once from the configuration. */
  syncSettings: SyncWorkerSettings;
  logger: Logger;
  database: Pick<Database, 'db'>;
  queue: SyncQueue;
  /** The queue's Redis (the sweep keeps the queue's marker there). */
  redis: Redis;
  /** Names this process in every lease it takes. */
  workerId: string;
  /** Per account: its classroom client, rate limiter and credentials breaker. */
  remotes: Pick<Remotes, 'all' | 'forInstitute'>;
  /** BullMQ's tracing; undefined when nothing traces. */
  telemetry: Telemetry | undefined;
}

export interface SyncWorkerOptions {
  onTransition?: (transition: Transition) => void;
  /** Told how each job run ended (metrics). Must not throw. */
  onJobResult?: (result: SyncJobResult) => void;
  /** Defaults to true; tests turn it off to control when sweeps and pruning run. */
  autoSweep?: boolean;
  /** Whose time the sweep's and the pruning's schedules keep (a test's); default the real one. */
  clock?: Clock;
}

export function createSyncWorker(deps: SyncWorkerDeps, options: SyncWorkerOptions = {}): SyncWorker {
  const { syncSettings: settings, logger, database, queue, workerId } = deps;
  // Set once the workers exist; the guards only pause and resume them.
  let pools: Worker<SyncJobData, SyncResult>[] = [];
  const accounts = syncAccounts(deps, () => pools);
  const processorDeps: ProcessorDeps = {
    db: database.db,
    logger,
    workerId,
    settings: settings.run,
    onTransition: options.onTransition,
    accountFor: accounts.forInstitute,
    sharedSlots: deps.remotes.all.length > 1,
    outageRetryMs: settings.backoffMaxMs,
  };
  const processor = observeResults(labelRuns(createSyncProcessor(processorDeps)), options.onJobResult);
  // Blocking commands need connections of their own. The background workers (operator work and
  // backfill) have slots of their own: they may wait for a rate-limit slot without taking one from live work.
  const connections = [createRedis(settings.redisUrl, 'worker'), createRedis(settings.redisUrl, 'worker')] as const;
  const worker = createBullWorker(deps, { name: SYNC_QUEUE, concurrency: settings.concurrency, connection: connections[0] }, processor);
  const background = createBullWorker(deps, { name: BACKGROUND_QUEUE, concurrency: settings.backgroundConcurrency, connection: connections[1] }, processor);
  pools = [worker, background];

  const sweep = createSweeper({ db: database.db, queue, redis: deps.redis, logger }, { stuckAfterMs: settings.stuckAfterMs });
  const stopHousekeeping = options.autoSweep === false ? undefined : startHousekeeping(deps, sweep, options.clock);

  let closing: Promise<void> | undefined;
  return {
    worker,
    background,
    sweep,
    close(graceMs = settings.shutdownGraceMs) {
      closing ??= (async () => {
        stopHousekeeping?.();
        for (const account of accounts.all) account.credentials.close();
        // A worker closed while its connection is still starting leaves BullMQ's start-up command to
        // reject unhandled ("Connection is closed"): let both finish starting first (bounded).
        await within(Promise.all(pools.map((pool) => pool.waitUntilReady().catch(() => undefined))), 2_000);
        const quit = () => Promise.all(connections.map((connection) => connection.quit().catch(() => connection.disconnect())));
        const closed = Promise.all(pools.map((pool) => pool.close()));
        if (!(await within(closed, graceMs)).done) {
          logger.warn({ graceMs }, 'active jobs did not finish in time; their leases will expire and they will run again');
          // Not close(true): BullMQ returns the close under way, which still waits for the jobs. Nor
          // are their connections cut: BullMQ retries a closing worker's commands without a pause.
          // The jobs are left running (a worker process exits soon after) and to their lease.
          void closed.then(quit, quit);
          return;
        }
        await quit();
      })();
      return closing;
    },
  };
}

type SyncProcessor = ReturnType<typeof createSyncProcessor>;

/**
 * Each account as the processor uses it, with a credentials guard of its own. A process whose every
 * account is refused takes no jobs until one works again; otherwise only the refused account's
 * jobs wait (src/sync/credentials.ts).
 */
function syncAccounts(deps: Pick<SyncWorkerDeps, 'logger' | 'remotes' | 'redis' | 'syncSettings'>, pools: () => Worker<SyncJobData, SyncResult>[]) {
  const { logger, remotes, redis } = deps;
  const { queuePrefix } = deps.syncSettings;
  const named = remotes.all.length > 1;
  let paused = false;
  const all: SyncAccount[] = [];
  const onChange = () => {
    const everyRefused = all.every((account) => account.credentials.isRefused());
    if (everyRefused === paused) return;
    paused = everyRefused;
    for (const pool of pools()) {
      if (paused) void pool.pause(true).catch((error: unknown) => logger.warn({ err: error }, 'could not pause the worker'));
      else pool.resume();
    }
  };
  for (const remote of remotes.all) {
    const { account } = remote;
    const credentials = createCredentialsGuard({
      breaker: remote.breaker,
      probeClient: createRemoteClient(account.classroom, UNMETERED),
      instituteId: account.classroom.instituteId,
      logger,
      probeEveryMs: account.classroom.keyProbeEveryMs,
      account: named ? account.name : undefined,
      onChange,
    });
    const owner = { queuePrefix, classroom: account.classroom };
    const lagMonitor = accountLagMonitor(redis, owner, deps.syncSettings.run.readLagMs);
    const listings = accountListings(redis, owner, logger);
    all.push({ name: account.name, classroom: remote.classroom, limiter: remote.limiter, credentials, lagMonitor, listings });
  }
  const byName = new Map(all.map((account) => [account.name, account]));
  const forInstitute = (instituteId: string) => {
    const remote = remotes.forInstitute(instituteId);
    return remote ? byName.get(remote.account.name) : undefined;
  };
  return { all, forInstitute };
}

/** A BullMQ worker over one of the sync queues, with the lock, stall and backoff settings the lease relies on. */
function createBullWorker(
  deps: Pick<SyncWorkerDeps, 'syncSettings' | 'logger' | 'telemetry'>,
  pool: { name: string; concurrency: number; connection: Redis },
  processor: SyncProcessor,
): Worker<SyncJobData, SyncResult> {
  const { syncSettings: settings, logger, telemetry } = deps;
  const worker = new Worker<SyncJobData, SyncResult>(pool.name, processor, {
    connection: pool.connection,
    prefix: settings.queuePrefix,
    concurrency: pool.concurrency,
    // Each run is a span in its batch's trace (child of where the job was added, whichever process).
    ...(telemetry ? { telemetry } : {}),
    // A SIGKILLed worker's jobs come back after the stall check; the PostgreSQL lease keeps the
    // re-run from racing a run that is still alive, so stalls are never counted against a job.
    maxStalledCount: 1_000,
    // How soon a dead process's jobs are noticed and handed to a live one: the lock runs out within
    // SYNC_JOB_LOCK of its last renewal and the next stall check (every half of it) moves them back,
    // about when the batch's lease (SYNC_LEASE, renewed by the run's heartbeat) runs out too.
    lockDuration: settings.jobLockMs,
    stalledInterval: Math.max(500, Math.round(settings.jobLockMs / 2)),
    settings: {
      // The wait grows with the failures in a row of the batch's step, not with attemptsMade (backoff.ts).
      backoffStrategy: (attemptsMade: number, type?: string, _error?: Error, job?: MinimalJob<SyncJobData>) =>
        type === BACKOFF_STRATEGY ? stepBackoff(job, attemptsMade, { baseMs: settings.backoffBaseMs, maxMs: settings.backoffMaxMs }) : 1_000,
    },
  });
  worker.on('error', (error) => logger.error({ err: error }, 'worker error'));
  worker.on('failed', (job, error) => {
    if (job) logger.debug({ jobId: job.id, batchId: job.data.batchId, err: error }, 'job attempt failed');
  });
  return worker;
}

/**
 * Every SYNC_SWEEP_EVERY: re-enqueue batches that lost their job, prune old audit rows and webhook
 * messages, and fold the counts' deltas (so `status` and the metrics read a few rows). Each on a
 * timer of its own: a sweep that keeps failing (Redis down) must not stop the pruning.
 */
function startHousekeeping(
  deps: Pick<SyncWorkerDeps, 'syncSettings' | 'database' | 'logger'>,
  sweep: () => Promise<unknown>,
  clock: Clock | undefined,
): () => void {
  const { syncSettings: settings, database, logger } = deps;
  const prune = () => pruneOld(database.db, settings.eventsRetentionMs);
  return repeatTasks(
    [
      { run: sweep, failure: 'sweep failed; will try again' },
      { run: prune, failure: 'pruning old audit rows and webhook messages failed; will try again' },
      { run: () => compactCounts(database.db), failure: 'folding the counts of batches and webhook messages failed; will try again' },
    ],
    { everyMs: settings.sweepEveryMs, logger, ...(clock ? { clock } : {}) },
  );
}

/** Wraps the processor so `onJobResult` hears how every run ended; changes nothing else. */
function observeResults(processor: SyncProcessor, onJobResult: ((result: SyncJobResult) => void) | undefined): SyncProcessor {
  if (!onJobResult) return processor;
  return (job, token) =>
    processor(job, token).then(
      (result) => {
        onJobResult(syncJobResult(job));
        return result;
      },
      (error: unknown) => {
        onJobResult(syncJobResult(job, error));
        throw error;
      },
    );
}

/** The audit trail and finished webhook messages keep BATCH_EVENTS_RETENTION; returns the audit rows pruned. */
async function pruneOld(db: Parameters<typeof pruneEvents>[0], retentionMs: number): Promise<number> {
  const events = await pruneEvents(db, retentionMs);
  await outbox.pruneMessages(db, retentionMs);
  return events;
}
