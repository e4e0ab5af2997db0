// Test databases are copies of one migrated template (CREATE DATABASE … TEMPLATE): migrating takes
// far longer than copying, and a suite makes a hundred databases. The template is named by a hash
// of migrations/, so a changed migration makes a new one; concurrent runs (two checkouts, several
// vitest workers) build it once under an advisory lock and never connect to it afterwards, which
// is what CREATE DATABASE … TEMPLATE needs.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { MIGRATIONS_FOLDER, runMigrations } from '../../src/db/migrate.ts';

const TEMPLATE_PREFIX = 'classroom_sync_template_';
const TEMPLATE_LOCK = 7_316_024_099;

let ready: Promise<string> | undefined;

/** Creates `databaseName` on `server` as a copy of the migrated template, building that once. */
export async function createMigratedDatabase(server: string, databaseName: string): Promise<void> {
  ready ??= ensureTemplate(server).catch((error) => {
    ready = undefined;
    throw error;
  });
  const template = await ready;
  await withAdmin(server, async (client) => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await client.query(`create database ${pg.escapeIdentifier(databaseName)} template ${pg.escapeIdentifier(template)}`);
        return;
      } catch (error) {
        // 55006: "source database is being accessed by other users": the build's last connection
        // may still be closing on the server's side. Wait and copy again.
        if ((error as { code?: string }).code !== '55006' || attempt >= 50) throw error;
        await new Promise((r) => setTimeout(r, 20 * attempt));
      }
    }
  });
}

/** The template's name: the hash of every file under migrations/, names and contents. */
export function templateName(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(MIGRATIONS_FOLDER, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(MIGRATIONS_FOLDER, file);
    try {
      hash.update(file).update(readFileSync(path));
    } catch {
      // a folder (meta/)
    }
  }
  return `${TEMPLATE_PREFIX}${hash.digest('hex').slice(0, 16)}`;
}

async function ensureTemplate(server: string): Promise<string> {
  const name = templateName();
  await withAdmin(server, async (client) => {
    await client.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    try {
      const found = await client.query<{ datistemplate: boolean }>('select datistemplate from pg_database where datname = $1', [name]);
      if (found.rows[0]?.datistemplate) return;
      // A build that died half way left a database not yet marked a template: start it again.
      await client.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
      await dropOlderTemplates(client, name);
      await client.query(`create database ${pg.escapeIdentifier(name)}`);
      await runMigrations(`${server}/${name}`);
      await client.query(`alter database ${pg.escapeIdentifier(name)} is_template true`);
    } finally {
      await client.query('select pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
    }
  });
  return name;
}

/** How many templates are kept: another checkout (a worktree, a clone) may be testing other migrations right now. */
const TEMPLATES_KEPT = 4;

/**
 * Templates of earlier migrations are of no use to this checkout, but may be to another one running
 * its tests at this moment: only the oldest beyond the newest TEMPLATES_KEPT are dropped (a
 * database's oid grows with its creation).
 */
async function dropOlderTemplates(client: pg.Client, keep: string): Promise<void> {
  const old = await client.query<{ datname: string }>('select datname from pg_database where datname like $1 and datname <> $2 order by oid desc offset $3', [
    `${TEMPLATE_PREFIX}%`,
    keep,
    TEMPLATES_KEPT - 1,
  ]);
  for (const { datname } of old.rows) {
    await client.query(`alter database ${pg.escapeIdentifier(datname)} is_template false`);
    await client.query(`drop database if exists ${pg.escapeIdentifier(datname)} with (force)`);
  }
}

async function withAdmin<T>(server: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: `${server}/postgres` });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
