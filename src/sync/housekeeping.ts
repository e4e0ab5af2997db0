// What a worker repeats on timers of its own: the sweep and the pruning. Each task keeps its own
// schedule, so one that keeps failing (the sweep needs Redis; pruning only PostgreSQL) never stops
// another: old audit rows and webhook messages are pruned while Redis is down too.
import type { Logger } from '../logging/logger.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';

export interface RepeatedTask {
  run: () => Promise<unknown>;
  /** Logged at warn when a run fails, with the error; the next run comes on schedule anyway. */
  failure: string;
}

export interface RepeatOptions {
  everyMs: number;
  logger: Logger;
  /** Whose time the schedule keeps (a test's); default the monotonic clock. */
  clock?: Clock;
}

/**
 * Runs each task every `everyMs`, the first `everyMs` after the start. A run still going when the
 * next is due delays that one (never two runs of a task at once); a failed run is logged and the
 * next comes on time. Returns the function that stops them (a run under way finishes by itself).
 */
export function repeatTasks(tasks: readonly RepeatedTask[], options: RepeatOptions): () => void {
  const stops = tasks.map((task) => repeat(task, options));
  return () => {
    for (const stop of stops) stop();
  };
}

function repeat(task: RepeatedTask, { everyMs, logger, clock = monotonicClock }: RepeatOptions): () => void {
  let stopped = false;
  let cancel = () => {};
  const tick = async () => {
    const startedAt = clock.now();
    try {
      await task.run();
    } catch (error) {
      logger.warn({ err: error }, task.failure);
    }
    if (!stopped) cancel = clock.after(everyMs - (clock.now() - startedAt), () => void tick());
  };
  cancel = clock.after(everyMs, () => void tick());
  return () => {
    stopped = true;
    cancel();
  };
}
