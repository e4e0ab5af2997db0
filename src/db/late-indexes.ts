// Indexes on the tables that grow with the batches are built after the SQL migrations, CONCURRENTLY
// (migrations/late-indexes.sql says why): a migration's CREATE INDEX would hold every write to its
// table until drizzle's one transaction commits. `migrate` runs these under its lock, each its own
// statement outside any transaction, before the backfills (which read some of them).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';

export const LATE_INDEXES_FILE = 'late-indexes.sql';

export interface LateIndex {
  name: string;
  /** `CREATE INDEX CONCURRENTLY IF NOT EXISTS "name" …`. */
  statement: string;
}

/** The indexes of `folder`/late-indexes.sql, in its order. */
export function lateIndexes(folder: string): LateIndex[] {
  const text = readFileSync(join(folder, LATE_INDEXES_FILE), 'utf8');
  return text
    .split('--> statement-breakpoint')
    .map((part) => part.replace(/^\s*--.*$/gm, '').trim())
    .filter((statement) => statement !== '')
    .map((statement) => {
      const name = /^CREATE INDEX CONCURRENTLY IF NOT EXISTS "([^"]+)"/.exec(statement)?.[1];
      if (!name) throw new Error(`${LATE_INDEXES_FILE}: not a CREATE INDEX CONCURRENTLY IF NOT EXISTS "name" statement: ${statement.slice(0, 80)}`);
      return { name, statement };
    });
}

/**
 * Builds each index not yet there; one a stopped build left invalid (a crash, a lost connection, a
 * cancel) is dropped and built again. Returns the names built. A build waits for transactions
 * already writing the table to end, then lets writers go on while it reads the table.
 */
export async function buildLateIndexes(pool: pg.Pool, folder: string): Promise<string[]> {
  const built: string[] = [];
  for (const index of lateIndexes(folder)) {
    const { rows } = await pool.query<{ valid: boolean }>(
      `select i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid
        where c.relname = $1 and c.relnamespace = 'public'::regnamespace`,
      [index.name],
    );
    if (rows[0]?.valid) continue;
    if (rows[0]) await pool.query(`drop index concurrently if exists "${index.name}"`);
    await pool.query(index.statement);
    built.push(index.name);
  }
  return built;
}
