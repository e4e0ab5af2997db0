// A benchmark's own database and queue prefix, made like the test harness makes them and removed
// afterwards. Every process a benchmark starts gets `env` (plus its own settings), so nothing a
// benchmark runs can reach the real service or real batches: the remote is always a local sandbox.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { SANDBOX_DEFAULTS } from '../../src/config/config.ts';
import { runMigrations } from '../../src/db/migrate.ts';
import { PG_SERVER, REDIS_URL, dropDatabase, dropQueueKeys, publishDepsOf } from '../../test/helpers/harness.ts';

// publishDepsOf(runtime): what publishBatches needs, built in one place for the tests and benchmarks.
export { PG_SERVER, REDIS_URL, publishDepsOf };

export interface Scratch {
  databaseName: string;
  queuePrefix: string;
  /** DATABASE_URL, REDIS_URL, QUEUE_PREFIX, the sandbox credentials, quiet defaults. */
  env: Record<string, string>;
  /** Drops the database and every Redis key under the prefix (and under `extraPrefixes`). */
  drop(extraPrefixes?: readonly string[]): Promise<void>;
}

/** Creates and migrates a database of its own for benchmark `name`. */
export async function createScratch(name: string): Promise<Scratch> {
  const id = randomBytes(4).toString('hex');
  const databaseName = `classroom_sync_bench_${id}`;
  const queuePrefix = `cs-bench-${name}-${id}`;
  const env: Record<string, string> = {
    ...SANDBOX_DEFAULTS,
    DATABASE_URL: `${PG_SERVER}/${databaseName}`,
    REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    NODE_ENV: 'production',
    LOG_LEVEL: 'silent',
    // One scheduled listing read in the middle of a run would count as a remote call of no batch.
    RECONCILE_EVERY: '0',
  };
  await runMigrations(env.DATABASE_URL!);
  return {
    databaseName,
    queuePrefix,
    env,
    async drop(extraPrefixes = []) {
      await dropDatabase(databaseName);
      for (const prefix of [queuePrefix, ...extraPrefixes]) await dropQueueKeys(prefix);
    },
  };
}

/** A plain pool on the scratch database, for the benchmark's own reads (counts, timings). */
export function scratchPool(scratch: Scratch): pg.Pool {
  const pool = new pg.Pool({ connectionString: scratch.env.DATABASE_URL, max: 2 });
  pool.on('error', () => {});
  return pool;
}

/** `n` batch-created events with ids `<prefix>-000001`…; names are unique so a duplicate would show. */
export function benchEvents(prefix: string, n: number, from = 0): { batchId: string; name: string; subject: string }[] {
  return Array.from({ length: n }, (_, i) => {
    const batchId = `${prefix}-${String(from + i + 1).padStart(6, '0')}`;
    return { batchId, name: `Bench ${batchId}`, subject: 'Bench' };
  });
}

export function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** A positive number from `--flag`, else from the environment variable, else the default. */
export function numberSetting(flag: string, envName: string, fallback: number): number {
  const raw = argValue(flag) ?? process.env[envName];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} / ${envName} must be a positive number (got ${raw})`);
  return n;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
