// Migrations on worker start survive a PostgreSQL connection cut mid-way (a restart, a failover,
// pg_terminate_backend): the worker tries again instead of exiting. Found by the fault suite, whose
// workers restarted while it cut every connection.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseUnreachableError, runMigrations } from '../../src/db/migrate.ts';
import { PG_SERVER, dropDatabase, waitFor } from '../helpers/harness.ts';

const MIGRATION_LOCK = 7_316_024_001;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function adminClient(database: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/${database}` });
  client.on('error', () => {});
  await client.connect();
  cleanups.push(() => client.end().catch(() => undefined));
  return client;
}

/** A fresh database, and a connection to it holding the migration lock (so a migrate waits for it). */
async function databaseWithLockHeld() {
  const name = `classroom_sync_test_${randomBytes(4).toString('hex')}`;
  const admin = await adminClient('postgres');
  await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  cleanups.push(() => dropDatabase(name));
  const holder = await adminClient(name);
  await holder.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
  // The migrating connection, once it waits for the lock.
  const waiting = () =>
    waitFor(async () => {
      const { rows } = await admin.query(
        `select pid from pg_stat_activity where datname = $1 and application_name = 'classroom-sync-migrate' and wait_event_type = 'Lock'`,
        [name],
      );
      return rows[0]?.pid as number | undefined;
    }, 'the migration to wait for its lock');
  return { name, url: `${PG_SERVER}/${name}`, admin, holder, waiting };
}

describe('migrations when the connection is cut', () => {
  it('try again on a new connection and finish', async () => {
    const db = await databaseWithLockHeld();
    const retries: number[] = [];
    const migrating = runMigrations(db.url, { onRetry: (_error, waitMs) => retries.push(waitMs) });
    await db.admin.query('select pg_terminate_backend($1)', [await db.waiting()]);
    await waitFor(() => retries.length > 0, 'a retry');
    await db.holder.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    await expect(migrating).resolves.toEqual({ createdDatabase: false });
    expect(retries).toEqual([250]);
    const { rows } = await db.holder.query(`select count(*)::int as n from information_schema.tables where table_name = 'batch_classes'`);
    expect(rows[0].n).toBe(1);
  });

  it('give up with the how-to-fix error once the retry window has passed', async () => {
    const db = await databaseWithLockHeld();
    // The handler goes on at once: the rejection can come while the terminate is still answering.
    const migrating = runMigrations(db.url, { retryForMs: 0 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await db.admin.query('select pg_terminate_backend($1)', [await db.waiting()]);
    const error = await migrating;
    expect(error).toBeInstanceOf(DatabaseUnreachableError);
    expect(String((error as Error).message)).toMatch(/Cannot reach PostgreSQL .*terminat.*Start it/s);
  });
});
