// `classroom-sync migrate`: creates the database when it is missing, then applies the committed
// drizzle-kit migrations under an advisory lock, so several processes starting at once are harmless.
import { fileURLToPath } from 'node:url';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { createDatabase } from './client.ts';
import { redactUrl } from '../urls.ts';

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

export async function runMigrations(url: string): Promise<{ createdDatabase: boolean }> {
  const createdDatabase = await ensureDatabase(url);
  const database = createDatabase(url, { max: 2, applicationName: 'classroom-sync-migrate' });
  const client = await database.pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await migrate(database.db, { migrationsFolder: MIGRATIONS_FOLDER });
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
    await database.close();
  }
  return { createdDatabase };
}
