// `classroom-sync worker`: runs sync jobs, and sweeps Postgres for batches that lost their job.
import { Worker } from 'bullmq';
import type { Runtime } from '../runtime.ts';
import { createRedis } from '../redis.ts';
import { fullJitterBackoff } from './backoff.ts';
import type { Transition } from './machine.ts';
import { type SyncJobResult, createSyncProcessor, syncJobResult } from './processor.ts';
import { BACKOFF_STRATEGY, SYNC_QUEUE, type SyncJobData, type SyncResult } from './queue.ts';
import { sweepStuckBatches } from './sweep.ts';
import { pruneEvents } from '../audit/events.ts';

export interface SyncWorker {
  worker: Worker<SyncJobData, SyncResult>;
  /** Runs one sweep now (also runs every SYNC_SWEEP_EVERY). */
  sweep(): Promise<{ examined: number; requeued: number }>;
  /** Stops taking jobs, lets active ones finish within `graceMs`, then closes. */
  close(graceMs?: number): Promise<void>;
}

export interface SyncWorkerOptions {
  onTransition?: (transition: Transition) => void;
  /** Told how each job run ended (metrics). Must not throw. */
  onJobResult?: (result: SyncJobResult) => void;
  /** Defaults to true; tests turn it off to control when sweeps run. */
  autoSweep?: boolean;
}

export function createSyncWorker(runtime: Runtime, options: SyncWorkerOptions = {}): SyncWorker {
  const { config, logger, database, queue, classroom, limiter, workerId } = runtime;
  const processor = createSyncProcessor({
    db: database.db,
    classroom,
    limiter,
    logger,
    workerId,
    settings: { leaseMs: config.sync.leaseMs, settleMs: config.sync.settleMs, throttlePauseMs: config.classroom.throttlePauseMs },
    onTransition: options.onTransition,
  });
  // Blocking commands need a connection of their own.
  const connection = createRedis(config.redisUrl, 'worker');
  const worker = new Worker<SyncJobData, SyncResult>(SYNC_QUEUE, observeResults(processor, options.onJobResult), {
    connection,
    prefix: config.queuePrefix,
    concurrency: config.sync.concurrency,
    // A SIGKILLed worker's jobs come back after the stall check; the Postgres lease keeps the
    // re-run from racing a run that is still alive, so a generous stall count is safe.
    maxStalledCount: 10,
    // How soon a dead process's jobs are noticed and handed to a live one.
    lockDuration: config.sync.jobLockMs,
    stalledInterval: config.sync.jobLockMs,
    settings: {
      backoffStrategy: (attemptsMade: number, type?: string) =>
        type === BACKOFF_STRATEGY ? fullJitterBackoff(attemptsMade, config.sync.backoffBaseMs, config.sync.backoffMaxMs) : 1_000,
    },
  });
  worker.on('error', (error) => logger.error({ err: error }, 'worker error'));
  worker.on('failed', (job, error) => {
    if (job) logger.debug({ jobId: job.id, batchId: job.data.batchId, err: error }, 'job attempt failed');
  });

  const sweep = () => sweepStuckBatches({ db: database.db, queue, logger }, { stuckAfterMs: config.sync.stuckAfterMs });
  const timer =
    options.autoSweep === false
      ? undefined
      : setInterval(() => {
          sweep()
            .then(() => pruneEvents(database.db, config.sync.eventsRetentionMs))
            .catch((error) => logger.warn({ err: error }, 'sweep failed; will try again'));
        }, config.sync.sweepEveryMs);
  timer?.unref();

  let closing: Promise<void> | undefined;
  return {
    worker,
    sweep,
    close(graceMs = config.sync.shutdownGraceMs) {
      closing ??= (async () => {
        if (timer) clearInterval(timer);
        let timeout: NodeJS.Timeout | undefined;
        const graceful = worker.close();
        const timedOut = new Promise<'timeout'>((resolve) => {
          timeout = setTimeout(() => resolve('timeout'), graceMs);
        });
        if ((await Promise.race([graceful, timedOut])) === 'timeout') {
          logger.warn({ graceMs }, 'active jobs did not finish in time; their leases will expire and they will run again');
          await worker.close(true);
        }
        clearTimeout(timeout);
        await connection.quit().catch(() => connection.disconnect());
      })();
      return closing;
    },
  };
}

type SyncProcessor = ReturnType<typeof createSyncProcessor>;

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
