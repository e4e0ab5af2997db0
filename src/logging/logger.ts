// The pino root. Secrets never reach a line: known secret paths are censored, join links are
// masked to a short prefix, and errors are reduced to whitelisted fields (so an HTTP client's
// error can never drag its request headers into a log).
import { DrizzleQueryError } from 'drizzle-orm/errors';
import pino, { type Logger } from 'pino';
import { isClassroomError } from '../classroom/errors.ts';
import { TOP_LEVEL_PATHS, censor, censorSecondLevel } from './secrets.ts';

export type { Logger };
export { maskJoinLink } from './secrets.ts';

/** Turns any thrown value into a log-safe object: name, message, kind, status, code, stack. */
export function serializeError(error: unknown): Record<string, unknown> {
  if (isClassroomError(error)) return { type: error.name, ...error.toSafeJSON(), stack: error.stack };
  if (error instanceof DrizzleQueryError) {
    // Its message lists the statement's parameters, which can hold a join link: the cause says why it failed.
    const cause = error.cause === undefined ? {} : { cause: serializeError(error.cause) };
    return { type: error.name, message: 'a PostgreSQL statement failed (parameters withheld)', ...cause };
  }
  if (error instanceof Error) {
    const { code } = error as { code?: unknown };
    return { type: error.name, message: error.message, ...(code === undefined ? {} : { code }), stack: error.stack };
  }
  return { type: typeof error, message: String(error) };
}

export interface LoggerOptions {
  level?: string;
  pretty?: boolean;
  destination?: pino.DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const base: pino.LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: 'classroom-sync' },
    redact: { paths: TOP_LEVEL_PATHS, censor },
    formatters: { log: censorSecondLevel },
    serializers: { err: serializeError, error: serializeError },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return censorChildBindings(rootLogger(base, options));
}

function rootLogger(base: pino.LoggerOptions, options: LoggerOptions): Logger {
  if (options.destination) return pino(base, options.destination);
  if (options.pretty) return pino({ ...base, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } } });
  return pino(base, bufferedStdout());
}

/**
 * pino gives a child's bindings no formatter of ours (`formatters.bindings` is the root's alone, and
 * `onChild` sees a child once its bindings are serialized), so the root's `child` censors them first. A
 * child is made from its parent by `Object.create`, so every descendant finds this `child` too.
 */
function censorChildBindings(root: Logger): Logger {
  const child = root.child;
  // Generic like pino's own `child`; `call` is told its types, as it would not infer a generic's.
  root.child = function censoring<Levels extends string = never>(this: Logger, bindings: pino.Bindings, options?: pino.ChildLoggerOptions<Levels>) {
    return child.call<Logger, [pino.Bindings, pino.ChildLoggerOptions<Levels> | undefined], Logger<Levels>>(this, censorSecondLevel(bindings), options);
  };
  return root;
}

/** A process's root logger from its settings: pretty on a terminal in development, JSON otherwise. */
export function processLogger(settings: { logLevel: string; env: string }): Logger {
  return createLogger({ level: settings.logLevel, pretty: settings.env === 'development' && process.stdout.isTTY });
}

/** How long a log line may wait in the buffer before it is written. */
const FLUSH_EVERY_MS = 250;
let stdout: pino.DestinationStream | undefined;

/**
 * stdout through a 4 KiB buffer, written when full and at least every FLUSH_EVERY_MS: a busy worker
 * logs several lines per batch, and one write each was a tenth of its CPU (bench/cost.ts). pino
 * flushes what is left when the process exits.
 */
function bufferedStdout(): pino.DestinationStream {
  // One per process: loggers writing whole buffers of their own to one pipe could tear lines.
  if (stdout) return stdout;
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  stdout = destination;
  setInterval(() => {
    try {
      destination.flush();
    } catch {
      // Nothing buffered, or a write already under way: the next tick takes it.
    }
  }, FLUSH_EVERY_MS).unref();
  return destination;
}
