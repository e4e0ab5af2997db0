// `classroom-sync worker`: migrations, then sync jobs and the operations surface (API, dashboard,
// metrics, probes on PORT) until a signal; drains before exiting 0.
import type { Config } from '../config/config.ts';
import { configWarnings } from '../config/warnings.ts';
import { runMigrations } from '../db/migrate.ts';
import { type HttpServer, createHttpServer } from '../http/server.ts';
import { type Logger, processLogger } from '../logging/logger.ts';
import { type Metrics, createMetrics } from '../metrics/metrics.ts';
import { createReconciler } from '../reconcile/scheduler.ts';
import { type Runtime, createRuntime, publishDepsOf } from '../runtime/runtime.ts';
import type { Clock } from '../support/clock.ts';
import { within } from '../support/timeout.ts';
import { urlForLog } from '../support/urls.ts';
import { type SyncWorker, createSyncWorker } from '../sync/sync-worker.ts';
import { type WebhookThread, startWebhookThread } from '../webhooks/index.ts';
import { httpSettingsOf } from '../http/settings.ts';

export interface WorkerProcessOptions {
  /** Require API_TOKEN on /metrics too. */
  metricsAuth?: boolean;
  /** Defaults to the one `createRuntime` makes from the config. */
  logger?: Logger;
  /** The HTTP server's clock (a test's; HttpServerOptions.clock). */
  clock?: Clock;
  /** What times the webhook delivery thread's restarts (a test's; WebhookThreadOptions.clock). */
  deliveryClock?: Clock;
}

/** Everything one worker process runs; `stop()` is the SIGTERM path, usable without a signal. */
export interface WorkerProcess {
  runtime: Runtime;
  metrics: Metrics;
  sync: SyncWorker;
  webhooks: WebhookThread;
  http: HttpServer;
  /** Base URL of the HTTP server. */
  url: string;
  stop(): Promise<void>;
}

export async function startWorker(config: Config, options: WorkerProcessOptions = {}): Promise<WorkerProcess> {
  const metrics = createMetrics({
    liveLaneBoundMs: config.sync.liveLaneBoundMs,
    accounts: config.accounts.map((a) => ({ name: a.name, ratePerMinute: a.classroom.rateLimitPerMinute })),
  });
  const runtime = createRuntime(config, { ...metrics.runtimeOptions, ...(options.logger ? { logger: options.logger } : {}) });
  let http: HttpServer;
  let url: string;
  // Started once the server listens; /readyz shows its state from then on.
  let delivery: WebhookThread | undefined;
  try {
    const { metricsAuth = false, clock } = options;
    const deps = { ...runtime, httpSettings: httpSettingsOf(runtime.config), metrics, publish: publishDepsOf(runtime), webhooks: () => delivery?.state() };
    http = await createHttpServer(deps, { metricsAuth, ...(clock ? { clock } : {}) });
    // Listen before taking jobs: a port clash should stop a fresh process before it does any work.
    url = await http.listen().catch((error: unknown) => {
      throw portError(error, config.http.port);
    });
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const sync = createSyncWorker(runtime, { onTransition: metrics.onTransition, onJobResult: metrics.recordJob });
  // Every worker registers the same schedule; each tick runs in exactly one of them. Created after
  // listening, so /healthz answers while Redis is still being reached.
  const reconciler = await createReconciler(runtime, { onRun: metrics.recordReconciliation }).catch(async (error: unknown) => {
    await Promise.allSettled([http.close(), sync.close(config.sync.shutdownGraceMs)]);
    await runtime.close();
    throw error;
  });
  http.addQueue(reconciler.queue);
  const webhooks = startDelivery(config, runtime, metrics, options.deliveryClock);
  delivery = webhooks;
  runtime.logger.info(
    { workerId: runtime.workerId, concurrency: config.sync.concurrency, queuePrefix: config.queuePrefix, remote: urlForLog(config.classroom.baseUrl), url },
    'worker started',
  );
  // Once per process, not per call: the setting and the fix, never a key.
  for (const { subject, message } of configWarnings(config)) runtime.logger.warn({ warning: subject }, message);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      const grace = config.sync.shutdownGraceMs;
      // Intake stops at once (no new connections; in-flight requests finish) while active jobs
      // get up to SHUTDOWN_GRACE; only then do the queues and pools they use go away.
      const results = await Promise.allSettled([
        http.close(),
        sync.close(grace),
        webhooks.close(grace),
        bounded(reconciler.close(), grace, () => runtime.logger.warn({ graceMs: grace }, 'reconciliation pass still running; leaving it to the next tick')),
      ]);
      await runtime.close();
      for (const r of results) if (r.status === 'rejected') throw r.reason;
    })());
  return { runtime, metrics, sync, webhooks, http, url, stop };
}

/**
 * Off the sync path: its own thread, pool and connections; a down endpoint never slows a batch. A
 * thread that stops is started again (with a backoff); the metrics and /readyz show it.
 */
function startDelivery(config: Config, runtime: Runtime, metrics: Metrics, clock: Clock | undefined): WebhookThread {
  return startWebhookThread(
    {
      databaseUrl: config.databaseUrl,
      settings: config.webhooks,
      accounts: config.accounts,
      logger: runtime.logger,
      onOutcome: metrics.recordWebhook,
      // The fleet's webhook_routes know this worker by its id: a restarted thread keeps its row.
      dispatcherId: runtime.workerId,
    },
    { onState: metrics.recordWebhookThread, ...(clock ? { clock } : {}) },
  );
}

/** Waits for `work` at most `ms`; calls `onTimeout` if it had to give up. */
async function bounded(work: Promise<void>, ms: number, onTimeout: () => void): Promise<void> {
  if (!(await within(work, ms)).done) onTimeout();
}

export async function startWorkerProcess(config: Config, options: WorkerProcessOptions = {}): Promise<void> {
  const logger = options.logger ?? processLogger(config);
  await runMigrations(config.databaseUrl, {
    onRetry: (error, waitMs) => logger.warn({ err: error, waitMs }, 'lost the PostgreSQL connection while migrating; trying again'),
  });
  const worker = await startWorker(config, { ...options, logger });
  await new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      logger.info({ signal }, 'stopping: no new requests or jobs; finishing active ones');
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      const waitedMs = config.sync.shutdownGraceMs + STOP_MARGIN_MS;
      bounded(worker.stop(), waitedMs, () => {
        logger.error({ waitedMs }, 'stopping did not finish in time; exiting anyway (active jobs run again once their leases expire)');
        process.exitCode = 1;
      }).then(resolve, (error: unknown) => {
        // The process still exits (a supervisor restarts it), but not with 0: the drain failed.
        logger.error({ err: error }, 'error while stopping');
        process.exitCode = 1;
        resolve();
      });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  logger.info('worker stopped');
  // A job cut off at the grace (still awaiting the remote, say) can keep the event loop alive; it
  // would do nothing useful: its queue and pools are closed and its lease will expire.
  setTimeout(() => process.exit(), EXIT_AFTER_STOP_MS).unref();
}

/** Past SHUTDOWN_GRACE, how long closing the queues, connections and pools may take. */
const STOP_MARGIN_MS = 10_000;
/** How long a stopped worker process waits for its event loop to empty before exiting anyway. */
const EXIT_AFTER_STOP_MS = 1_000;

function portError(error: unknown, port: number): Error {
  if ((error as { code?: unknown }).code === 'EADDRINUSE') {
    return new Error(`PORT ${port} is already in use (another worker on this host?). Give each worker process its own PORT, or PORT=0 for any free port.`, {
      cause: error,
    });
  }
  return error instanceof Error ? error : new Error(String(error));
}
