// Migrations on worker start survive a PostgreSQL connection cut mid-way (a restart, a failover,
// pg_terminate_backend): the worker tries again instead of exiting. Found by the fault suite, whose
// workers restarted while it cut every connection. And what a migration leaves to `migrate`'s
// backfills (src/db/backfills.ts) is done by them, a few rows a statement, resumed after a stop.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKFILLS, runBackfills } from '../../src/db/backfills.ts';
import { createDatabase } from '../../src/db/client.ts';
import { lateIndexes } from '../../src/db/late-indexes.ts';
import { DatabaseUnreachableError, MIGRATIONS_FOLDER, runMigrations } from '../../src/db/migrate.ts';
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

describe('backfills', () => {
  const APPLIED = 'applied values of classes made before changes';

  /** A fresh database with every SQL migration applied and no backfill run, as `migrate` leaves it between the two. */
  async function migratedWithoutBackfills() {
    const name = `classroom_sync_test_${randomBytes(4).toString('hex')}`;
    const admin = await adminClient('postgres');
    await admin.query(`create database ${pg.escapeIdentifier(name)}`);
    cleanups.push(() => dropDatabase(name));
    const client = await adminClient(name);
    await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_FOLDER });
    const database = createDatabase(`${PG_SERVER}/${name}`);
    cleanups.push(() => database.close());
    return { client, db: database.db };
  }

  it("0008's applied_event = event is filled in by migrate, two rows a statement, a worker's own value kept, resumed after a stop", async () => {
    const { client, db } = await migratedWithoutBackfills();
    const event = (batchId: string, subject: string) => JSON.stringify({ batchId, instituteId: 'inst-a', name: batchId, subject, extra: {} });
    // Rows as the version before 0008 left them (0008 adds applied_event, null), in id order: synced
    // with a class, waiting, an add-class in flight, failed before any class, reopened with its class.
    const rows: [string, string, string | null][] = [
      ['synced-1', 'synced', 'class-1'],
      ['pending-1', 'pending', null],
      ['creating-1', 'creating', null],
      ['failed-1', 'failed', null],
      ['edited', 'synced', 'class-5'],
      ['synced-2', 'synced', 'class-6'],
      ['pending-2', 'pending', null],
      ['reopened', 'pending', 'class-8'],
    ];
    for (const [batchId, state, classId] of rows) {
      await client.query(
        `insert into batch_classes (institute_id, batch_id, class_name, state, class_id, event) values ('inst-a', $1, $1, $2::batch_state, $3, $4::jsonb)`,
        [batchId, state, classId, event(batchId, 'Logic')],
      );
    }
    expect(
      (await client.query('select count(*)::int as n from batch_classes where applied_event is not null')).rows[0].n,
      'applied_event set before the backfill',
    ).toBe(0);
    // A worker of the new version edited one class meanwhile: what it wrote is newer than `event`.
    await client.query(`update batch_classes set applied_event = $1::jsonb where batch_id = 'edited'`, [event('edited', 'Physics')]);
    const messages = async () => (await client.query('select count(*)::int as n from webhook_messages')).rows[0].n as number;
    const messagesBefore = await messages();
    const applied = async () =>
      (
        await client.query<{ batch_id: string; subject: string | null }>(
          `select batch_id, applied_event ->> 'subject' as subject from batch_classes order by id`,
        )
      ).rows.map((r) => [r.batch_id, r.subject]);

    // Two steps of two rows to fill each (the second goes on after the first's ids), then the process stops.
    const backfill = BACKFILLS.find((b) => b.name === APPLIED);
    expect(backfill, 'the backfill of applied_event').toBeDefined();
    const step = backfill?.start();
    expect(await step?.(db, 2)).toEqual({ changed: 2, done: false });
    expect(await step?.(db, 2)).toEqual({ changed: 2, done: false });
    expect(await applied()).toEqual([
      ['synced-1', 'Logic'],
      ['pending-1', null],
      ['creating-1', 'Logic'],
      ['failed-1', 'Logic'],
      ['edited', 'Physics'],
      ['synced-2', 'Logic'],
      ['pending-2', null],
      ['reopened', null],
    ]);

    // The next migrate goes on with what is left.
    const changed = await runBackfills(db, BACKFILLS, 2);
    expect(changed[APPLIED]).toBe(1);
    expect(await applied()).toEqual([
      ['synced-1', 'Logic'],
      ['pending-1', null],
      ['creating-1', 'Logic'],
      ['failed-1', 'Logic'],
      ['edited', 'Physics'],
      ['synced-2', 'Logic'],
      ['pending-2', null],
      ['reopened', 'Logic'],
    ]);
    const notTheirEvent = (await client.query('select count(*)::int as n from batch_classes where applied_event is not null and applied_event <> event'))
      .rows[0].n;
    expect(notTheirEvent, 'rows whose applied_event is not their event').toBe(1);
    expect(await messages(), 'webhook messages written by the backfill').toBe(messagesBefore);
    // Nothing left: a later migrate changes nothing.
    expect((await runBackfills(db, BACKFILLS, 2))[APPLIED]).toBe(0);
  });
});

describe('indexes built after the migrations', () => {
  /** Every index the schema declares (drizzle-kit's last snapshot), by table. */
  function declaredIndexes(): string[] {
    const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: { idx: number }[] };
    const last = String(journal.entries.at(-1)!.idx).padStart(4, '0');
    const snapshot = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', `${last}_snapshot.json`), 'utf8')) as {
      tables: Record<string, { indexes: Record<string, unknown> }>;
    };
    return Object.values(snapshot.tables).flatMap((t) => Object.keys(t.indexes));
  }

  async function migratedDatabase(): Promise<{ url: string; client: pg.Client }> {
    const name = `classroom_sync_test_${randomBytes(4).toString('hex')}`;
    const url = `${PG_SERVER}/${name}`;
    cleanups.push(() => dropDatabase(name));
    await runMigrations(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    cleanups.push(() => client.end());
    return { url, client };
  }

  const indexes = async (client: pg.Client) =>
    (
      await client.query<{ name: string; valid: boolean }>(
        `select c.relname as name, i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
          where c.relnamespace = 'public'::regnamespace and not i.indisprimary`,
      )
    ).rows;

  it('leave every index the schema declares in place and valid, and no other', async () => {
    const { client } = await migratedDatabase();
    const found = await indexes(client);
    expect(found.filter((i) => !i.valid)).toEqual([]);
    const declared = declaredIndexes();
    // Unique keys made by a constraint are declared as constraints, not indexes: only declared ones here.
    expect(
      found
        .map((i) => i.name)
        .filter((n) => !n.endsWith('_pkey'))
        .sort(),
    ).toEqual([...declared].sort());
    // Each late one is in the schema (what the queries and drizzle-kit know).
    for (const late of lateIndexes(MIGRATIONS_FOLDER)) expect(declared).toContain(late.name);
  });

  it('are built again by the next migrate when a stopped build left one invalid or missing', async () => {
    const { url, client } = await migratedDatabase();
    // A build stopped half-way leaves its index in the catalog, invalid (what a crash or a cancel of CONCURRENTLY leaves).
    await client.query(`update pg_index set indisvalid = false where indexrelid = 'batch_classes_state_id_idx'::regclass`);
    await client.query('drop index batch_classes_backfill_wait_idx');
    await runMigrations(url);
    const after = await indexes(client);
    expect(after.find((i) => i.name === 'batch_classes_state_id_idx')).toEqual({ name: 'batch_classes_state_id_idx', valid: true });
    expect(after.find((i) => i.name === 'batch_classes_backfill_wait_idx')).toEqual({ name: 'batch_classes_backfill_wait_idx', valid: true });
  });

  it('are built while a second migrate waits for the lock (workers starting together)', async () => {
    const { url, client } = await migratedDatabase();
    await client.query('drop index batch_classes_institute_state_id_idx');
    // Two workers start at once: one builds, the other waits for the migration lock. The waiting one
    // must not hold a snapshot the concurrent build waits for (the builder's lock is held by another of
    // its connections, so PostgreSQL sees no deadlock and both would wait for good).
    const both = Promise.all([runMigrations(url), runMigrations(url)]);
    const result = await Promise.race([both.then(() => 'done'), new Promise((resolve) => setTimeout(resolve, 15_000, 'hung'))]);
    if (result === 'hung') {
      // Free the two migrates (end the waiter's wait) so the test ends.
      await client.query(
        `select pg_cancel_backend(pid) from pg_stat_activity where application_name = 'classroom-sync-migrate' and wait_event_type = 'Lock' and query like '%pg_advisory_lock%'`,
      );
      await both.catch(() => undefined);
    }
    expect(result).toBe('done');
    expect((await indexes(client)).find((i) => i.name === 'batch_classes_institute_state_id_idx')?.valid).toBe(true);
  }, 30_000);

  it('are built when the database sets a statement_timeout shorter than a build', async () => {
    const { url, client } = await migratedDatabase();
    const name = new URL(url).pathname.slice(1);
    await client.query('drop index batch_classes_state_id_idx');
    await client.query(`alter database ${pg.escapeIdentifier(name)} set statement_timeout = '300ms'`);
    // A transaction writing the table, open for longer than that: the build waits for it (as one on a
    // large table takes minutes), and a build the database's timeout cancels would fail at every migrate.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query('begin');
    await holder.query('lock table batch_classes in row exclusive mode');
    const migrating = runMigrations(url);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await holder.query('commit');
    await expect(migrating).resolves.toEqual({ createdDatabase: false });
    expect((await indexes(client)).find((i) => i.name === 'batch_classes_state_id_idx')?.valid).toBe(true);
  });

  it('let writers write while an index is built', async () => {
    const { url, client } = await migratedDatabase();
    await client.query(`
      insert into batch_classes (institute_id, batch_id, class_name, event, state)
      select 'inst-' || (g % 5), 'w-' || g, 'Class ' || g, '{}'::jsonb, 'synced' from generate_series(1, 1000) g`);
    await client.query('drop index batch_classes_institute_state_id_idx');
    // A transaction that holds a write on batch_classes open: a build inside a migration would wait for
    // it and then block every later writer; a concurrent build waits for it without blocking them.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query('begin');
    await holder.query(`update batch_classes set updated_at = now() where batch_id = 'w-1'`);
    const migrating = runMigrations(url);
    await waitFor(async () => {
      const { rows } = await client.query(`select 1 from pg_stat_activity where query like 'CREATE INDEX CONCURRENTLY%' and state = 'active'`);
      return rows.length > 0;
    }, 'the build to start');
    // Another writer is not held up by the build (a plain CREATE INDEX would make it wait for the holder).
    await client.query(`update batch_classes set updated_at = now() where batch_id = 'w-2'`);
    await holder.query('commit');
    await migrating;
    expect((await indexes(client)).find((i) => i.name === 'batch_classes_institute_state_id_idx')?.valid).toBe(true);
  });
});
