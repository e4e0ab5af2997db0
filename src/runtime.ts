// The composition root: builds every long-lived dependency from a Config, once, and closes them
// in reverse order. Commands, the HTTP server and tests all start here.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { type ClassroomClient, type ClassroomHooks, createClassroomClient } from './classroom/client.ts';
import type { Config } from './config.ts';
import { type Database, createDatabase } from './db/client.ts';
import { type Logger, createLogger } from './logger.ts';
import { type RateLimiter, createRateLimiter } from './ratelimit/limiter.ts';
import { type Redis, createRedis } from './redis.ts';
import { type SyncQueue, createSyncQueue, settleQueue } from './sync/queue.ts';
import { createHash } from 'node:crypto';

export interface Runtime {
  config: Config;
  logger: Logger;
  database: Database;
  /** For queues and producers. */
  redis: Redis;
  queue: SyncQueue;
  limiter: RateLimiter;
  classroom: ClassroomClient;
  workerId: string;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger?: Logger;
  /** Extra observers of remote calls (metrics, audit). */
  classroomHooks?: Pick<ClassroomHooks, 'afterCall'>;
  onRateLimitWait?: (ms: number) => void;
}

export function createRuntime(config: Config, options: RuntimeOptions = {}): Runtime {
  const logger = options.logger ?? createLogger({ level: config.logLevel, pretty: config.env === 'development' && process.stdout.isTTY });
  const database = createDatabase(config.databaseUrl, { max: Math.max(10, config.sync.concurrency + 4) });
  const redis = createRedis(config.redisUrl, 'worker');
  const queue = createSyncQueue({ connection: redis, prefix: config.queuePrefix, attempts: config.sync.attempts });
  // Without a listener an 'error' event (Redis unreachable) would end the process.
  queue.on('error', (error) => logger.warn({ err: error }, 'queue connection error; will keep retrying'));
  const limiter = createRateLimiter({
    redis,
    key: `${config.queuePrefix}:ratelimit:${apiKeyFingerprint(config)}`,
    callsPerMinute: config.classroom.rateLimitPerMinute,
    ...(options.onRateLimitWait ? { onWait: options.onRateLimitWait } : {}),
  });
  const classroom = createClassroomClient(config.classroom, {
    beforeCall: async () => {
      await limiter.acquire();
    },
    ...(options.classroomHooks?.afterCall ? { afterCall: options.classroomHooks.afterCall } : {}),
  });
  const workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  return {
    config,
    logger,
    database,
    redis,
    queue,
    limiter,
    classroom,
    workerId,
    async close() {
      await settleQueue(queue);
      await queue.close().catch(() => {});
      // quit() waits for queued commands, which never run while Redis is unreachable: bound it.
      const quit = redis.quit().then(() => true, () => false);
      const timedOut = new Promise<false>((resolve) => setTimeout(() => resolve(false), 2_000).unref());
      if (!(await Promise.race([quit, timedOut]))) redis.disconnect();
      await database.close();
    },
  };
}

/** One budget per API key, without putting the key itself into a Redis key name. */
function apiKeyFingerprint(config: Config): string {
  return createHash('sha256').update(`${config.classroom.userId}:${config.classroom.apiKey}`).digest('hex').slice(0, 16);
}
