// Each test file gets its own database, its own queue prefix and its own sandbox on a free port,
// and removes all three when it is done. Test files do not call createHarness themselves: they use
// useHarness / useHarnessWithWorker / useHarnessPerTest (use-harness.ts), which also close what a
// test opened and fail the file when something was left open.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type Config, loadConfig } from '../../src/config/config.ts';
import type { PublishDeps } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { type Runtime, createRuntime, publishDepsOf as publishRuntimeDeps } from '../../src/runtime/runtime.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { type RunningSandbox, type SandboxOptions, sandboxOptionsFromConfig, startSandbox } from '../../src/sandbox/index.ts';
import { createMigratedDatabase } from './template.ts';

export const PG_SERVER = process.env.TEST_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Settings that keep retries and settle delays short enough for a test. */
export const FAST_SYNC: Record<string, string> = {
  SYNC_BACKOFF_BASE: '20ms',
  SYNC_BACKOFF_MAX: '200ms',
  SYNC_SETTLE: '150ms',
  SYNC_READ_LAG: '300ms',
  SYNC_LEASE: '3s',
  SYNC_JOB_LOCK: '2s',
  CLASSROOM_TIMEOUT: '1s',
  SYNC_CONCURRENCY: '16',
  CLASSROOM_RATE_LIMIT_PER_MINUTE: '600000',
  CLASSROOM_THROTTLE_PAUSE: '300ms',
  LOG_LEVEL: 'silent',
};

export interface Harness {
  env: Record<string, string>;
  config: Config;
  sandbox: RunningSandbox;
  runtime: Runtime;
  databaseName: string;
  close(): Promise<void>;
}

export async function createHarness(overrides: Record<string, string> = {}, sandboxOverrides: Partial<SandboxOptions> = {}): Promise<Harness> {
  const id = randomBytes(4).toString('hex');
  const databaseName = `classroom_sync_test_${id}`;
  const base: Record<string, string> = {
    DATABASE_URL: `${PG_SERVER}/${databaseName}`,
    REDIS_URL,
    QUEUE_PREFIX: `cs-test-${id}`,
    NODE_ENV: 'test',
    ...FAST_SYNC,
    ...overrides,
  };
  const sandbox = await startSandbox({ ...sandboxOptionsFromConfig(loadConfig(base)), ...sandboxOverrides });
  const env = { CLASSROOM_BASE_URL: sandbox.url, ...base };
  const config = loadConfig(env);
  await createMigratedDatabase(PG_SERVER, databaseName);
  const opened = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
  // Closing twice is harmless: teardown closes the runtime first to see what else still holds the
  // database, then closes the rest.
  let closing: Promise<void> | undefined;
  const runtime: Runtime = { ...opened, close: () => (closing ??= opened.close()) };
  return {
    env,
    config,
    sandbox,
    runtime,
    databaseName,
    async close() {
      await runtime.close();
      await sandbox.close();
      await dropQueueKeys(config.queuePrefix);
      await dropDatabase(databaseName);
    },
  };
}

export async function dropDatabase(name: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await client.connect();
  try {
    await client.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
  } finally {
    await client.end();
  }
}

export async function dropQueueKeys(prefix: string): Promise<void> {
  const redis = createRedis(REDIS_URL, 'worker');
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Polls `probe` until it returns a truthy value; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * What publishBatches, enqueueNdjson and importFile need, from a harness or any runtime: the one
 * place in test/ and bench/ that builds it.
 */
export function publishDepsOf(source: Harness | Runtime): PublishDeps {
  return publishRuntimeDeps('runtime' in source ? source.runtime : source);
}
