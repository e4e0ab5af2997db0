// scripts/check-mapping.ts, the lint step behind ARCHITECTURE.md's "one named operation per file, one
// statement each unless it says why".
import { describe, expect, it } from 'vitest';
import { MORE_THAN_ONE, RAW_SQL, checkMappingFile, runsRawSql } from '../../scripts/check-mapping.ts';

const lines = (...text: string[]) => `${text.join('\n')}\n`;
const HEAD = "import { sql } from 'drizzle-orm';\nimport { type Db, execute } from './sql.ts';";

describe('checkMappingFile', () => {
  it('passes one operation named for its file, running one statement, beside helpers that take no database', () => {
    const text = lines(
      HEAD,
      'export function fieldsOf(x: string) { return x; }',
      'export async function markDone(db: Db, id: number) {',
      '  await execute(db, sql`update t set done = true where id = 1`);',
      '}',
    );
    expect(checkMappingFile('mark-done.ts', text)).toEqual([]);
  });

  it('names a second operation, an operation not named for its file, and a second statement', () => {
    const text = lines(
      HEAD,
      'export async function markDone(db: Db) { await execute(db, sql`select 1`); }',
      'export async function markUndone(db: Db) { await db.update(t).set({}); }',
    );
    expect(checkMappingFile('mark-done.ts', text).map((o) => o.problem)).toEqual([
      'exports 2 operations (markDone, markUndone): one a file',
      'runs 2 statements: one, or say why in MORE_THAN_ONE',
    ]);
    expect(checkMappingFile('done.ts', lines(HEAD, 'export async function markDone(db: Db) { await execute(db, sql`select 1`); }'))).toEqual([
      { file: 'done.ts', problem: 'its operation markDone is not named for the file (done)' },
    ]);
  });

  it('counts one statement in a loop as more than one, but not one in a function defined in a loop', () => {
    const looped = lines(HEAD, 'export async function pruneAll(db: Db) {', '  for (;;) { await execute(db, sql`delete from t`); }', '}');
    expect(checkMappingFile('prune-all.ts', looped).map((o) => o.problem)).toEqual(['runs a statement in a loop: one, or say why in MORE_THAN_ONE']);
    const deferred = lines(HEAD, 'export async function pruneAll(db: Db) {', '  const run = () => execute(db, sql`delete from t`);', '  return run();', '}');
    expect(checkMappingFile('prune-all.ts', deferred)).toEqual([]);
  });

  it('passes a file MORE_THAN_ONE lists, and names a listed one that runs only one statement now', () => {
    const [listed] = Object.keys(MORE_THAN_ONE) as [string];
    const op = listed
      .replace(/^.*\//, '')
      .replace('.ts', '')
      .replace(/-([a-z])/g, (_, l: string) => l.toUpperCase());
    const two = lines(HEAD, `export async function ${op}(db: Db) { await execute(db, sql\`select 1\`); await execute(db, sql\`select 2\`); }`);
    expect(checkMappingFile(listed, two)).toEqual([]);
    const one = lines(HEAD, `export async function ${op}(db: Db) { await execute(db, sql\`select 1\`); }`);
    expect(checkMappingFile(listed, one).map((o) => o.problem)).toEqual(['runs one statement now: take it out of MORE_THAN_ONE']);
  });
});

describe('runsRawSql', () => {
  it('finds a pool query, a drizzle execute and a sql template; not a request property named query', () => {
    expect(runsRawSql('a.ts', "await client.query<{ n: number }>('select 1');")).toBe(true);
    expect(runsRawSql('b.ts', 'await db.execute(raw);')).toBe(true);
    expect(runsRawSql('c.ts', 'const s = sql`select 1`;')).toBe(true);
    expect(runsRawSql('d.ts', 'const q = request.query; const r = reply.status(200);')).toBe(false);
  });

  it('is allowed only in the files RAW_SQL names, each with its reason', () => {
    expect(Object.entries(RAW_SQL).every(([file, why]) => file.endsWith('.ts') && why.length > 20)).toBe(true);
    expect(Object.keys(RAW_SQL).filter((file) => /^mapping\//.test(file))).toEqual([]);
  });
});
