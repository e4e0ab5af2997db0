// Settings files (the accounts file, the API clients file): JSON or YAML. JSON is read as YAML (it
// is a subset), so both give line numbers; no message repeats a value from the file.
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';

export type StructuredFile = { ok: true; value: unknown } | { ok: false; problem: string };

export function readStructuredFile(path: string): StructuredFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? 'unreadable');
    return { ok: false, problem: `cannot read ${path}: ${why}` };
  }
  const document = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  const syntax = document.errors[0];
  if (syntax) {
    const { line, column } = lineAndColumn(text, syntax.pos[0]);
    return { ok: false, problem: `${path} is not valid JSON or YAML at line ${line}, column ${column}: ${syntax.message}` };
  }
  return { ok: true, value: document.toJS() };
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/** How a file's entries are named in its messages: `client "north-lms" (clients[1])`. */
export interface EntryNaming {
  /** The top-level list: `clients`, `accounts`. */
  list: string;
  /** One entry: `client`, `account`. */
  noun: string;
  /** Whether an entry's `name` is shown (an invalid one is not: it may be a misplaced secret). */
  validName(name: string): boolean;
}

/** `client "north-lms" (clients[1]) role: must be …`, or `clients[1] name: …` for an unnamed one. */
export function describeEntryIssue(issue: { path: readonly PropertyKey[]; message: string }, raw: unknown, naming: EntryNaming): string {
  const [top, index, ...field] = issue.path;
  if (top !== naming.list || typeof index !== 'number') return `${issue.path.map(String).join('.') || 'the file'}: ${issue.message}`;
  const entry = (raw as Record<string, unknown[] | undefined>)[naming.list]?.[index];
  const name = entry && typeof entry === 'object' ? (entry as { name?: unknown }).name : undefined;
  const at = `${naming.list}[${index}]`;
  const who = typeof name === 'string' && naming.validName(name) ? `${naming.noun} "${name}" (${at})` : at;
  const where = field.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('');
  return `${who}${where ? ` ${where}` : ''}: ${issue.message}`;
}
