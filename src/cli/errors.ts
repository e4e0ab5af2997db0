// What the CLI prints when a command fails: one line that says what is wrong and what to do about
// it, and a stack trace only with --verbose. drizzle wraps every pg error in "Failed query: …" (its
// parameters may hold join links), so the code that says what happened is looked for on `.cause`.
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { ConfigError } from '../config/error.ts';
import { ImportFileError } from '../commands/import-file-error.ts';
import { redactUrl } from '../support/urls.ts';

/** A mistake on the command line; exit code 2, like a configuration error. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface FatalContext {
  /** --verbose: print the stack trace (and causes) after the one-line message. */
  verbose: boolean;
  /** DATABASE_URL as configured, when the configuration loaded; names the database in messages. */
  databaseUrl?: string | undefined;
}

export interface Explained {
  message: string;
  exitCode: number;
}

type Coded = Error & { code?: unknown; address?: unknown; port?: unknown; query?: unknown };

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const MIGRATE = '`npx classroom-sync migrate`';

/** Prints the explanation (and, with --verbose, the stack) to stderr; returns the exit code. */
export function reportFatal(error: unknown, context: FatalContext, print: (line: string) => void = console.error): number {
  const { message, exitCode } = explainFatal(error, context);
  print(message);
  if (context.verbose) print(stackOf(error));
  return exitCode;
}

export function explainFatal(error: unknown, context: FatalContext): Explained {
  if (error instanceof ImportFileError) return { message: `cannot import: ${error.message}`, exitCode: 1 };
  if (error instanceof ConfigError || error instanceof UsageError) return { message: error.message, exitCode: 2 };
  const database = describeDatabase(context.databaseUrl, error);
  const coded = chain(error).find((e) => typeof e.code === 'string');
  const code = coded?.code as string | undefined;
  switch (code) {
    case '3D000':
      return {
        message: `PostgreSQL has no database "${database.name}" (${database.where}): create it and its tables with ${MIGRATE}, or fix DATABASE_URL.`,
        exitCode: 1,
      };
    case '42P01':
    case '42703':
      return {
        message: `The database "${database.name}" is not migrated (it lacks classroom-sync's tables or columns): run ${MIGRATE}, then this command again.`,
        exitCode: 1,
      };
    case '28P01':
    case '28000':
      return { message: `PostgreSQL at ${database.where} refused the login: fix the user name and password in DATABASE_URL.`, exitCode: 1 };
  }
  if (coded !== undefined && code !== undefined && UNREACHABLE.has(code)) return { message: unreachable(coded, code, database, error), exitCode: 1 };
  const root = coded ?? chain(error).at(-1);
  const text = root && !isQueryError(root) ? root.message : String(error);
  return { message: `${firstLine(text)}${context.verbose ? '' : ' (run again with --verbose for the stack trace)'}`, exitCode: 1 };
}

/** "Start PostgreSQL" or "start Redis", told apart by where the refused connection went. */
function unreachable(coded: Coded, code: string, database: { where: string; host?: string; port?: string }, error: unknown): string {
  const target = typeof coded.address === 'string' ? `${coded.address}${coded.port === undefined ? '' : `:${String(coded.port)}`}` : undefined;
  const isPostgres = chain(error).some(isQueryError) || (database.port !== undefined && String(coded.port) === database.port);
  if (isPostgres) {
    return `Cannot reach PostgreSQL at ${database.where} (${code}): start PostgreSQL (e.g. \`docker compose up -d postgres\`), or set DATABASE_URL to a server that runs.`;
  }
  return `Cannot reach ${target ?? 'a server'} (${code}): start PostgreSQL and Redis (e.g. \`docker compose up -d postgres redis\`), or fix DATABASE_URL / REDIS_URL.`;
}

function describeDatabase(url: string | undefined, error: unknown): { name: string; where: string; port?: string } {
  // Without a configuration (it failed to load) the server's own words name the database.
  const fromMessage = /database "([^"]+)" does not exist/.exec(
    chain(error)
      .map((e) => e.message)
      .join('\n'),
  )?.[1];
  if (!url) return { name: fromMessage ?? '(see DATABASE_URL)', where: 'DATABASE_URL' };
  try {
    const u = new URL(url);
    const name = decodeURIComponent(u.pathname.replace(/^\//, '')) || fromMessage || 'postgres';
    return { name, where: redactUrl(url), port: u.port || '5432' };
  } catch {
    return { name: fromMessage ?? '(see DATABASE_URL)', where: 'DATABASE_URL' };
  }
}

/** The error, its causes, and the first of an AggregateError's errors (a host with two addresses). */
function chain(error: unknown): Coded[] {
  const out: Coded[] = [];
  let current: unknown = error;
  while (current instanceof Error && out.length < 10 && !out.includes(current)) {
    out.push(current);
    current = current.cause ?? (current instanceof AggregateError ? current.errors[0] : undefined);
  }
  return out;
}

function isQueryError(error: Coded): error is DrizzleQueryError {
  return error instanceof DrizzleQueryError;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? text;
}

/** Stacks of the error and its causes; a failed query shows its SQL but never its parameters. */
function stackOf(error: unknown): string {
  return chain(error)
    .map((e, i) => {
      const frames = (e.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
      const head = isQueryError(e) ? `${e.name}: Failed query: ${e.query}` : `${e.name}: ${e.message}`;
      return [`${i === 0 ? '' : 'caused by '}${head}`, ...frames].join('\n');
    })
    .join('\n');
}
