// Runs a reconciliation pass every RECONCILE_EVERY on a queue of its own. The schedule is a BullMQ
// job scheduler with a fixed id: every worker process upserts the same one, so however many start
// there is exactly one schedule, and each tick is one job that exactly one worker runs. Ticks are
// aligned to multiples of RECONCILE_EVERY since the Unix epoch, so the default 15 minutes falls on
// :00, :15, :30 and :45 UTC whichever process registered the schedule first.
import { Queue, type Telemetry, Worker } from 'bullmq';
import type { Remotes } from '../accounts/remotes.ts';
import type { Database } from '../db/client.ts';
import type { Logger } from '../logging/logger.ts';
import { type Redis, createRedis } from '../redis/connection.ts';
import type { SyncQueue } from '../sync/queue.ts';
import { runReconciliation } from './run.ts';
import { type ReconcileReport, emptyCounts } from './types.ts';
import { everyKeyRefused } from './accounts.ts';
import type { ReconcileSettings } from './settings.ts';
import { reconcileDepsOf } from './setup.ts';

export const RECONCILE_QUEUE = 'reconcile';
export const RECONCILE_SCHEDULER_ID = 'reconcile-every';

export interface ReconcileJobResult {
  runId: number | null;
  counts: ReconcileReport['counts'];
  repairs: ReconcileReport['repairs'];
}

export interface Reconciler {
  queue: Queue<Record<string, never>, ReconcileJobResult>;
  /** Undefined when created with `worker: false` (schedule only). */
  worker: Worker<Record<string, never>, ReconcileJobResult> | undefined;
  close(): Promise<void>;
}

/** What the scheduled passes use (a Runtime has all of it). */
export interface ReconcilerDeps {
  /** Reconciliation's settings (src/reconcile/settings.ts), built once from the configuration. */
  reconcileSettings: ReconcileSettings;
  logger: Logger;
  /** For the reconcile queue; the worker opens a connection of its own. */
  redis: Redis;
  database: Pick<Database, 'db'>;
  /** The sync queue: repairs re-enqueue batches on it. */
  queue: SyncQueue;
  /** Per account: its classroom client and credentials breaker. */
  remotes: Pick<Remotes, 'all' | 'forInstitute'>;
  /** BullMQ's tracing; undefined when nothing traces. */
  telemetry: Telemetry | undefined;
}

export interface ReconcilerOptions {
  /** Milliseconds between passes; default RECONCILE_EVERY. 0 removes the schedule. */
  everyMs?: number;
  onRun?: (report: ReconcileReport) => void;
  /** Defaults to true; false only keeps the schedule registered (no passes run in this process). */
  worker?: boolean;
  linkChecks?: number;
}

export async function createReconciler(deps: ReconcilerDeps, options: ReconcilerOptions = {}): Promise<Reconciler> {
  const { reconcileSettings: settings, logger, telemetry } = deps;
  const queue = new Queue<Record<string, never>, ReconcileJobResult>(RECONCILE_QUEUE, {
    connection: deps.redis,
    prefix: settings.queuePrefix,
    ...(telemetry ? { telemetry } : {}),
  });
  await placeSchedule(queue, options.everyMs ?? settings.everyMs);

  let worker: Reconciler['worker'];
  // Blocking commands need a connection of their own.
  const connection = options.worker === false ? undefined : createRedis(settings.redisUrl, 'worker');
  if (connection) {
    worker = new Worker<Record<string, never>, ReconcileJobResult>(RECONCILE_QUEUE, reconcileJob(deps, options), {
      connection,
      prefix: settings.queuePrefix,
      concurrency: 1,
      // Each pass is a trace of its own: the tick's job, its statements and its remote calls.
      ...(telemetry ? { telemetry } : {}),
    });
    worker.on('error', (error) => logger.error({ err: error }, 'reconcile worker error'));
  }

  let closing: Promise<void> | undefined;
  return {
    queue,
    worker,
    close() {
      // The schedule stays in Redis on purpose: it belongs to the fleet, not to this process.
      closing ??= (async () => {
        await worker?.close();
        await connection?.quit().catch(() => connection.disconnect());
        await queue.close();
      })();
      return closing;
    },
  };
}

/** Upserts the fleet's one schedule, with its first tick on a multiple of `everyMs`; 0 removes it. */
async function placeSchedule(queue: Reconciler['queue'], everyMs: number): Promise<void> {
  if (everyMs > 0) {
    await queue.upsertJobScheduler(
      RECONCILE_SCHEDULER_ID,
      // startDate only places the first tick; once the scheduler exists, BullMQ keeps its own slots.
      { every: everyMs, startDate: Math.ceil(Date.now() / everyMs) * everyMs },
      { name: 'reconcile', data: {}, opts: { attempts: 1, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } } },
    );
  } else {
    await queue.removeJobScheduler(RECONCILE_SCHEDULER_ID);
  }
}

/** One tick: a pass, or a skip while the key is refused; a pass with errors fails the job. */
function reconcileJob(deps: ReconcilerDeps, options: ReconcilerOptions): () => Promise<ReconcileJobResult> {
  const { reconcileSettings: settings, logger } = deps;
  return async () => {
    // While every key is refused every listing would fail: the credentials alert already speaks.
    const refused = await everyKeyRefused(deps.remotes);
    if (refused) {
      logger.info({ component: 'reconcile' }, `reconciliation pass skipped: ${refused}`);
      return { runId: null, counts: emptyCounts(), repairs: { requeued: 0, linkStepsReset: 0, adopted: 0, editsRequested: 0, skipped: 0 } };
    }
    const report = await runReconciliation(reconcileDepsOf(deps, logger), {
      trigger: 'schedule',
      ...settings.pass,
      ...(options.linkChecks === undefined ? {} : { linkChecks: options.linkChecks }),
      ...(options.onRun ? { onRun: options.onRun } : {}),
    });
    // A failed pass is a failed job (visible on the dashboard); the next tick runs regardless.
    if (!report.ok) throw new Error(`reconciliation run ${report.runId} had errors: ${report.errors.join('; ')}`);
    return { runId: report.runId, counts: report.counts, repairs: report.repairs };
  };
}
