// A database as an older version left it: the migrations folder cut after a given migration.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS_FOLDER } from '../../src/db/migrate.ts';

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
