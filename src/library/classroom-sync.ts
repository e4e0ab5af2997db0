// The integrator's handle: publish batch events (created, updated, cancelled) and read mappings from Node code, with
// its own connection pool, Redis connection and queue, all released by close(). The worker that
// does the syncing runs elsewhere (`classroom-sync worker`), or in-process via createSyncWorker.
import { type BatchView, countByState } from '../read-model/index.ts';
import { type Config, loadConfig } from '../config/config.ts';
import { createDatabase } from '../db/client.ts';
import type { BatchState } from '../mapping/index.ts';
import {
  type AcceptedBatch,
  type PublishDeps,
  type PublishOutcome,
  publishBatchCancelled,
  publishBatchCreated,
  publishBatchUpdated,
  publishBatches,
} from '../intake/publish.ts';
import { publishDepsOf } from '../runtime/runtime.ts';
import type { BatchCancelledInput, BatchCreatedInput, BatchUpdatedInput } from '../intake/schema.ts';
import { type Logger, createLogger } from '../logging/logger.ts';
import { createRedis } from '../redis/connection.ts';
import { closeQueues, createSyncQueue, waitForQueueReady } from '../sync/queue.ts';
import { type BatchPage, type ListBatchesQuery, getBatch, listBatches } from './mappings.ts';

export interface ClassroomSync {
  readonly config: Config;
  /** Records and queues one batch. Throws InvalidEventError (naming each bad field) for a bad event. */
  publishBatchCreated(event: BatchCreatedInput): Promise<AcceptedBatch>;
  /** New values for a recorded batch: its class is renamed or edited (see docs/library.md). */
  publishBatchUpdated(event: BatchUpdatedInput): Promise<AcceptedBatch>;
  /** The batch is cancelled: it never gets a class, or its class is archived. */
  publishBatchCancelled(event: BatchCancelledInput): Promise<AcceptedBatch>;
  /** Many at once, of any types: each valid event is accepted even when others are rejected; they apply in order. */
  publishBatches(events: readonly unknown[]): Promise<PublishOutcome[]>;
  /** One batch's mapping; the institute defaults to CLASSROOM_INSTITUTE_ID. */
  getBatch(batchId: string, instituteId?: string): Promise<BatchView | undefined>;
  listBatches(query?: ListBatchesQuery): Promise<BatchPage>;
  countByState(): Promise<Record<BatchState, number>>;
  /** Closes the pool and the Redis connection. Safe to call twice. */
  close(): Promise<void>;
}

export interface ClassroomSyncOptions {
  /** Defaults to a pino logger at the configured LOG_LEVEL. */
  logger?: Logger;
}

/**
 * Builds a publisher from a Config (default: loadConfig() over process.env). The database must be
 * migrated first (`npx classroom-sync migrate`, or runMigrations(config.databaseUrl)).
 */
export function createClassroomSync(config: Config = loadConfig(), options: ClassroomSyncOptions = {}): ClassroomSync {
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  const database = createDatabase(config.databaseUrl, { max: 5, applicationName: 'classroom-sync-library' });
  // A producer fails fast when Redis is down; the batch is still recorded and the sweep queues it.
  const redis = createRedis(config.redisUrl, 'producer');
  const queue = createSyncQueue({ connection: redis, prefix: config.queuePrefix, attempts: config.sync.attempts });
  const deps: PublishDeps = publishDepsOf({ database, queue, logger, config });
  let closing: Promise<void> | undefined;
  return {
    config,
    publishBatchCreated: (event) => publishBatchCreated(deps, event),
    publishBatchUpdated: (event) => publishBatchUpdated(deps, event),
    publishBatchCancelled: (event) => publishBatchCancelled(deps, event),
    publishBatches: (events) => publishBatches(deps, events),
    getBatch: (batchId, instituteId = config.classroom.instituteId) => getBatch(database.db, instituteId, batchId),
    listBatches: (query) => listBatches(database.db, query),
    countByState: () => countByState(database.db),
    close() {
      closing ??= (async () => {
        await waitForQueueReady(queue);
        await closeQueues(queue).catch((error: unknown) => logger.warn({ err: error }, 'closing the queues failed; their connection is closed next'));
        await redis.quit().catch(() => redis.disconnect());
        await database.close();
      })();
      return closing;
    },
  };
}
