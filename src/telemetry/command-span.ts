// A short command (enqueue, import, retry, reconcile…) is one trace: its statements, queue adds and
// remote calls are children of one root span named after it. The batches it queues continue that
// trace in the worker. Long-running commands get none: every job and request of a worker would
// otherwise hang under one span for the life of the process; theirs start their own traces.
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { TRACER_NAME } from './queue-telemetry.ts';

/** Commands that run until a signal; their work is traced per request and per job instead. */
const LONG_RUNNING = new Set(['worker', 'demo', 'sandbox']);

/** The command `argv` runs (its first word after the options), or undefined. */
export function commandOf(argv: readonly string[]): string | undefined {
  return argv.slice(2).find((word) => !word.startsWith('-'));
}

/** Runs `run` inside the command's root span (or without one, for long-running and unknown commands). */
export async function inCommandSpan(argv: readonly string[], run: () => Promise<void>): Promise<void> {
  const command = commandOf(argv);
  if (command === undefined || LONG_RUNNING.has(command) || !/^[a-z-]+$/.test(command)) return run();
  await trace.getTracer(TRACER_NAME).startActiveSpan(`classroom-sync ${command}`, { attributes: { 'classroom_sync.command': command } }, async (span) => {
    try {
      await run();
      // Commands report failure through the exit code (src/cli/errors.ts), not by throwing.
      if (process.exitCode !== undefined && process.exitCode !== 0) span.setStatus({ code: SpanStatusCode.ERROR, message: `exit code ${process.exitCode}` });
    } finally {
      span.end();
    }
  });
}
