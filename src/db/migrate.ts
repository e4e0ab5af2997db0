// `classroom-sync migrate`: creates the database when it is missing, then applies the committed
// drizzle-kit migrations under an advisory lock, so several processes starting at once are harmless.
import { fileURLToPath } from 'node:url';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { runBackfills } from './backfills.ts';
import pg from 'pg';
import { createDatabase } from './client.ts';
import { buildLateIndexes } from './late-indexes.ts';
import { isConnectionLoss } from './connection-loss.ts';
import { redactUrl } from '../support/urls.ts';

export { redactUrl };

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../migrations', import.meta.url));
const MIGRATION_LOCK = 7_316_024_001;

export class DatabaseUnreachableError extends Error {
  override readonly name = 'DatabaseUnreachableError';
  constructor(url: string, cause: unknown) {
    super(
      `Cannot reach PostgreSQL at ${redactUrl(url)} (${(cause as Error)?.message ?? String(cause)}). ` +
        'Start it (e.g. `docker compose up -d postgres`) or set DATABASE_URL, then run the command again.',
      { cause },
    );
  }
}

/** Creates the database named in `url` if it does not exist. Returns true when it created it. */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL must name a database, e.g. postgres://user@host:5432/classroom_sync');
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 10_000 });
  client.on('error', () => {}); // a dropped connection rejects the pending query; it must not end the process
  try {
    await client.connect();
  } catch (error) {
    throw new DatabaseUnreachableError(url, error);
  }
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount) return false;
    await client.query(`create database ${pg.escapeIdentifier(name)}`);
    return true;
  } catch (error) {
    // Another process created it between our check and our create.
    if ((error as { code?: string }).code === '42P04') return false;
    throw error;
  } finally {
    await client.end();
  }
}

export interface MigrateOptions {
  /** How long to keep trying when the connection is lost mid-way (a restart, a cut). Default 60 s. */
  retryForMs?: number;
  /** Told about each retry (the CLI logs it). */
  onRetry?: (error: unknown, waitMs: number) => void;
}

/**
 * Creates the database if needed and applies the migrations. A PostgreSQL that cannot be reached at
 * all fails at once (DatabaseUnreachableError, which says how to start it); a connection lost once
 * reached is tried again for `retryForMs`: drizzle applies the pending migrations in one transaction
 * (all or none) and skips the applied ones, and each backfill goes on from where it stopped, so a
 * second pass finishes what the first began.
 */
export async function runMigrations(url: string, options: MigrateOptions = {}): Promise<{ createdDatabase: boolean }> {
  const createdDatabase = await ensureDatabase(url);
  const deadline = Date.now() + (options.retryForMs ?? 60_000);
  for (let attempt = 0; ; attempt += 1) {
    try {
      await migrateUnderLock(url);
      return { createdDatabase };
    } catch (error) {
      const waitMs = Math.min(8_000, 250 * 2 ** attempt);
      if (!isConnectionLoss(error)) throw error;
      if (Date.now() + waitMs > deadline) throw new DatabaseUnreachableError(url, error);
      options.onRetry?.(error, waitMs);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}

async function migrateUnderLock(url: string): Promise<void> {
  // No query timeout: an index build on a large table legitimately takes minutes.
  const database = createDatabase(url, { max: 2, applicationName: 'classroom-sync-migrate', queryTimeoutMs: 0 });
  let lost: unknown;
  try {
    const client = await database.pool.connect();
    client.on('error', (error) => {
      lost = error;
    });
    try {
      // Several processes starting at once: one migrates, the others wait here and find nothing to do.
      await waitForLock(client);
      await migrate(database.db, { migrationsFolder: MIGRATIONS_FOLDER });
      await buildLateIndexes(database.pool, MIGRATIONS_FOLDER);
      await runBackfills(database.db);
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    } catch (error) {
      lost ??= isConnectionLoss(error) ? error : undefined;
      throw error;
    } finally {
      // A broken connection is destroyed, not pooled; its session (and the lock) ended with it.
      client.release(lost instanceof Error ? lost : undefined);
    }
  } finally {
    await database.close();
  }
}

/**
 * Takes the migration lock, waiting in turns of a second. One statement waiting for good would hold
 * its snapshot for good, and a CREATE INDEX CONCURRENTLY of the process holding the lock waits for
 * every older snapshot to end: that process's lock is held by another of its connections, so
 * PostgreSQL sees no deadlock, and both would wait forever. Each turn ends, and its snapshot with it.
 */
async function waitForLock(client: pg.PoolClient): Promise<void> {
  await client.query(`set lock_timeout = '1s'`);
  for (;;) {
    try {
      await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03') throw error; // lock_not_available: another turn
    }
  }
  await client.query('reset lock_timeout');
}
