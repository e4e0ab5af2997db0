// `npm run lint` step: src/mapping (outbox/ too) is one named operation per file. A file exports at
// most one operation (an exported function whose first parameter is the database, `Db`), named for
// the file (mark-synced.ts: markSynced); helper files (sql.ts, doubt.ts, fenced-write.ts…) export
// none. An operation runs one SQL statement (CTEs, no transactions: a crash between two statements
// cannot leave half a change), unless MORE_THAN_ONE says why it may run more. A statement is a call
// of execute/rowsOf/runPrepared/pruneInSlices or of a query builder's select/insert/update/delete;
// one inside a loop counts as more than one.
// Outside src/mapping, only the files in RAW_SQL may run SQL (a `.query(` or `.execute(` call, or a
// `sql` template): every other statement goes through src/mapping, which owns the tables.
// Run with `tsx scripts/check-mapping.ts [dir]`; prints one line per offender and exits 1 if any.
import { readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { parseSource, sourceFiles } from './source-files.ts';

/** Operations that run more than one statement, each with the reason it is safe (paths under src/mapping/). */
export const MORE_THAN_ONE: Readonly<Record<string, string>> = {
  'apply-change.ts': 'reads the row, then updates it only if unchanged since (compare and set), reading again after a lost race',
  'acquire-lease.ts': 'the update takes the lease in one statement; the select that follows only reads why it was refused',
  'compact-counts.ts': 'one statement a table (batch_counts, webhook_message_counts): each fold is whole on its own, a reader sees deltas or their sum',
  'prune-in-slices.ts': 'deletes in bounded slices, each its own statement, so a large backlog never holds one long lock',
};

/** The files outside src/mapping that may run SQL of their own, each with why (paths under src/). */
export const RAW_SQL: Readonly<Record<string, string>> = {
  'db/migrate.ts': "`migrate`: the advisory lock around drizzle's migrator, and whether the tables exist",
  'db/late-indexes.ts': "`migrate`'s indexes built CONCURRENTLY on the big tables, outside the migrations' transaction",
  'db/backfills.ts': "`migrate`'s data backfills a migration leaves (batch_classes rows written in slices): the one domain SQL outside src/mapping",
  'http/health.ts': "/readyz's `select 1`: asks whether PostgreSQL answers, reads no table",
  'commands/demo-data.ts': "the demo's truncate of its own database before it starts",
  'commands/preflight.ts': 'whether the tables exist (to_regclass) before a command runs, to name `classroom-sync migrate` as the fix',
};

const STATEMENT_FUNCTIONS = new Set(['execute', 'rowsOf', 'runPrepared', 'pruneInSlices']);
const STATEMENT_METHODS = new Set(['execute', 'select', 'insert', 'update', 'delete', 'query', 'transaction']);

export interface MappingOffence {
  file: string;
  problem: string;
}

/** What breaks the rule in one file of src/mapping; `file` is its path under src/mapping/. */
export function checkMappingFile(file: string, text: string): MappingOffence[] {
  const source = parseSource(file, text);
  const operations = source.statements.filter(isOperation).map((fn) => fn.name?.text ?? '');
  const offences: MappingOffence[] = [];
  if (operations.length > 1) offences.push({ file, problem: `exports ${operations.length} operations (${operations.join(', ')}): one a file` });
  const expected = camelCase(basename(file, '.ts'));
  if (operations.length === 1 && operations[0] !== expected)
    offences.push({ file, problem: `its operation ${operations[0]} is not named for the file (${expected})` });
  const statements = statementSites(source);
  if (operations.length > 0 && statements > 1 && MORE_THAN_ONE[file] === undefined)
    offences.push({
      file,
      problem: `runs ${statements === Number.POSITIVE_INFINITY ? 'a statement in a loop' : `${statements} statements`}: one, or say why in MORE_THAN_ONE`,
    });
  if (MORE_THAN_ONE[file] !== undefined && statements <= 1) offences.push({ file, problem: 'runs one statement now: take it out of MORE_THAN_ONE' });
  return offences;
}

/** Whether a file outside src/mapping runs SQL (`file`: its path under src/). */
export function runsRawSql(file: string, text: string): boolean {
  let found = false;
  const visit = (node: ts.Node): void => {
    if (ts.isTaggedTemplateExpression(node) && node.tag.getText() === 'sql') found = true;
    const callee = ts.isCallExpression(node) ? node.expression : undefined;
    if (callee && ts.isPropertyAccessExpression(callee) && ['query', 'execute'].includes(callee.name.text)) found = true;
    if (!found) ts.forEachChild(node, visit);
  };
  visit(parseSource(file, text));
  return found;
}

function isOperation(node: ts.Statement): node is ts.FunctionDeclaration {
  if (!ts.isFunctionDeclaration(node) || !node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return false;
  const type = node.parameters[0]?.type;
  return type !== undefined && ts.isTypeReferenceNode(type) && type.typeName.getText() === 'Db';
}

/** How many statements the file's code runs: sites counted, one inside a loop as infinitely many. */
function statementSites(source: ts.SourceFile): number {
  let count = 0;
  const visit = (node: ts.Node, inLoop: boolean): void => {
    const loop = inLoop || ts.isIterationStatement(node, false);
    if (ts.isCallExpression(node) && isStatementCall(node)) count += loop ? Number.POSITIVE_INFINITY : 1;
    ts.forEachChild(node, (child) => visit(child, loop && !ts.isFunctionLike(child)));
  };
  visit(source, false);
  return count;
}

function isStatementCall(call: ts.CallExpression): boolean {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return STATEMENT_FUNCTIONS.has(callee.text);
  return ts.isPropertyAccessExpression(callee) && STATEMENT_METHODS.has(callee.name.text) && !ts.isCallExpression(callee.expression);
}

const camelCase = (name: string) => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

/** Not operations: the folder's doors, and the statement runners every operation calls (sql.ts). */
const NOT_OPERATIONS = new Set(['index.ts', 'outbox/index.ts', 'sql.ts']);

/** Every offence under `src` (src/ of the repository by default), as `src/<path>: problem` lines. */
export function checkSource(src: string): string[] {
  const mapping = join(src, 'mapping');
  const operations = sourceFiles(mapping, (path) => NOT_OPERATIONS.has(path)).flatMap((path) =>
    checkMappingFile(relative(mapping, path), readFileSync(path, 'utf8')).map(({ file, problem }) => `src/mapping/${file}: ${problem}`),
  );
  // db/schema declares (its `sql` templates are index predicates and defaults): it runs nothing.
  const raw = sourceFiles(src, (path) => /^(mapping|db\/schema)(\/|$)/.test(path))
    .map((path) => relative(src, path))
    .filter((file) => runsRawSql(file, readFileSync(join(src, file), 'utf8')) !== (RAW_SQL[file] !== undefined))
    .map((file) =>
      RAW_SQL[file] ? `src/${file}: runs no SQL now: take it out of RAW_SQL` : `src/${file}: runs SQL outside src/mapping (add an operation there)`,
    );
  return [...operations, ...raw];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const offences = checkSource(process.argv[2] ?? fileURLToPath(new URL('../src', import.meta.url)));
  for (const line of offences) console.log(line);
  if (offences.length > 0) process.exit(1);
}
