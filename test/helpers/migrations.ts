// A database as an older version left it: the migrations folder cut after a given migration.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { MIGRATIONS_FOLDER } from '../../src/db/migrate.ts';
import { PG_SERVER, dropDatabase } from './harness.ts';

/** A copy of the migrations folder that stops after `lastIdx` (drizzle applies what its journal lists), and its removal. */
export function migrationsUpTo(lastIdx: number): { folder: string; remove: () => void } {
  const folder = mkdtempSync(join(tmpdir(), 'cs-migrations-'));
  mkdirSync(join(folder, 'meta'));
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: { idx: number; tag: string }[] };
  journal.entries = journal.entries.filter((e) => e.idx <= lastIdx);
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify(journal));
  for (const e of journal.entries) copyFileSync(join(MIGRATIONS_FOLDER, `${e.tag}.sql`), join(folder, `${e.tag}.sql`));
  for (const f of readdirSync(join(MIGRATIONS_FOLDER, 'meta'))) {
    if (f !== '_journal.json' && Number(f.slice(0, 4)) <= lastIdx) copyFileSync(join(MIGRATIONS_FOLDER, 'meta', f), join(folder, 'meta', f));
  }
  return { folder, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

/**
 * A new database with the SQL migrations up to `lastIdx` applied (no backfill, no late index), as a
 * deployment of that version has it, and a client on it. `defer` gets what to close, newest first.
 */
export async function databaseAtMigration(lastIdx: number, defer: (close: () => unknown) => void): Promise<{ name: string; url: string; client: pg.Client }> {
  const name = `classroom_sync_test_${randomBytes(4).toString('hex')}`;
  const url = `${PG_SERVER}/${name}`;
  const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await admin.connect();
  await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  await admin.end();
  defer(() => dropDatabase(name));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  defer(() => client.end());
  const cut = migrationsUpTo(lastIdx);
  defer(cut.remove);
  await migrate(drizzle(client), { migrationsFolder: cut.folder });
  return { name, url, client };
}
