// The composition root: builds every long-lived dependency from a Config, once, and closes them
// in reverse order. Commands, the HTTP server and tests all start here.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Telemetry } from 'bullmq';
import { type RemoteObservers, type Remotes, createRemotes } from '../accounts/remotes.ts';
import type { Config } from '../config/config.ts';
import { type Database, createDatabase } from '../db/client.ts';
import type { PublishDeps } from '../intake/publish.ts';
import { type Logger, processLogger } from '../logging/logger.ts';
import type { CredentialsBreaker } from '../ratelimit/breaker.ts';
import { type Redis, createRedis } from '../redis/connection.ts';
import { within } from '../support/timeout.ts';
import { type SyncQueue, closeQueues, createSyncQueue, waitForQueueReady } from '../sync/queue.ts';
import { queueTelemetry } from '../telemetry/queue-telemetry.ts';
import { type SyncWorkerSettings, syncWorkerSettingsOf } from '../sync/settings.ts';
import { type ReconcileSettings, reconcileSettingsOf } from '../reconcile/settings.ts';

export interface Runtime {
  config: Config;
  /** The sync worker's settings (src/sync/settings.ts): what it is handed instead of the configuration. */
  syncSettings: SyncWorkerSettings;
  /** Reconciliation's settings (src/reconcile/settings.ts). */
  reconcileSettings: ReconcileSettings;
  logger: Logger;
  database: Database;
  /** For queues and producers. */
  redis: Redis;
  queue: SyncQueue;
  /** Per account: its classroom client, rate limiter and credentials breaker (src/accounts). */
  remotes: Remotes;
  workerId: string;
  /** BullMQ's tracing, for every queue and worker of this runtime; undefined when nothing traces. */
  telemetry: Telemetry | undefined;
  close(): Promise<void>;
}

export interface RuntimeOptions extends RemoteObservers {
  logger?: Logger;
  /** Defaults to the process's, set up by startTracing() (src/telemetry). */
  telemetry?: Telemetry | undefined;
}

export function createRuntime(config: Config, options: RuntimeOptions = {}): Runtime {
  const logger = options.logger ?? processLogger(config);
  const database = createDatabase(config.databaseUrl, { max: Math.max(10, config.sync.concurrency + 4) });
  const redis = createRedis(config.redisUrl, 'worker');
  const telemetry = options.telemetry ?? queueTelemetry();
  const queue = createSyncQueue({ connection: redis, prefix: config.queuePrefix, attempts: config.sync.attempts, telemetry });
  // Without a listener an 'error' event (Redis unreachable) would end the process.
  queue.on('error', (error) => logger.warn({ err: error }, 'queue connection error; will keep retrying'));
  const { logger: _logger, telemetry: _telemetry, ...observers } = options;
  const remotes = createRemotes({
    accounts: config.accounts,
    defaultAccount: defaultAccountOf(config),
    queuePrefix: config.queuePrefix,
    redis,
    logger,
    observers,
    onRefused: (breaker, call, account) => openBreaker(breaker, call, logger, account),
  });
  const workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  return {
    config,
    syncSettings: syncWorkerSettingsOf(config),
    reconcileSettings: reconcileSettingsOf(config),
    logger,
    database,
    redis,
    queue,
    remotes,
    workerId,
    telemetry,
    async close() {
      await waitForQueueReady(queue);
      await closeQueues(queue).catch((error: unknown) => logger.warn({ err: error }, 'closing the queues failed; their connection is closed next'));
      // quit() waits for queued commands, which never run while Redis is unreachable: bound it.
      const quit = await within(redis.quit(), 2_000).catch(() => ({ done: false }));
      if (!quit.done) redis.disconnect();
      await database.close();
    },
  };
}

/** Opens the breaker; only the process whose call opened it logs (one line for the fleet). */
export function openBreaker(
  breaker: CredentialsBreaker,
  refusal: { httpStatus?: number | undefined; bodyStatus?: number | undefined; error?: string | undefined },
  logger: Logger,
  account?: string,
): void {
  const status = refusal.httpStatus === 401 || refusal.httpStatus === 403 ? refusal.httpStatus : refusal.bodyStatus;
  breaker.open({ status, reason: refusal.error ?? 'credentials refused' }).then(
    (opened) => {
      if (opened) {
        logger.error(
          { breaker: 'open', status, account },
          `the classroom service refuses the API key${account ? ` of account ${account}` : ''} (${refusal.error ?? `HTTP ${status}`}): every worker stops calling it for this account and one probes it periodically; its batches wait and use no attempt`,
        );
      }
    },
    (error: unknown) => logger.warn({ err: error }, 'could not open the credentials breaker in Redis; calls will keep being refused one by one'),
  );
}

/** The name of the account serving the default institute. */
export function defaultAccountOf(config: Pick<Config, 'accounts' | 'classroom'>): string {
  const serving = config.accounts.find((account) => account.instituteIds.includes(config.classroom.instituteId));
  return (serving ?? config.accounts[0])?.name ?? 'default';
}

/** What intake needs to record and enqueue events: the one place these dependencies are put together. */
export function publishDepsOf(rt: Pick<Runtime, 'database' | 'queue' | 'logger'> & { config: Pick<Config, 'classroom' | 'accounts'> }): PublishDeps {
  const { instituteId, classNameTemplate } = rt.config.classroom;
  // Without an accounts file the one account syncs any institute: nothing is refused for its institute.
  const servedInstitutes = rt.config.accounts.some((a) => a.anyInstitute) ? undefined : new Set(rt.config.accounts.flatMap((a) => a.instituteIds));
  return { db: rt.database.db, queue: rt.queue, logger: rt.logger, defaults: { instituteId, classNameTemplate, servedInstitutes } };
}
