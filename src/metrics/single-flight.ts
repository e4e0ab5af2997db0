// Many callers, one run. Two ways of sharing `work` between callers that arrive together:
//   - singleFlight: callers join the run in flight, and for `reuseMs` after a run started its result
//     is served as is (a short cache: for reads too costly to repeat, e.g. whole-table counts);
//   - paced: a run starts at most once per `intervalMs`; a caller that comes sooner waits for the
//     next run, which every caller waiting shares. Nothing served is older than its caller, and a
//     storm of callers costs one run per interval.
// Both time their intervals by the clock they are given (src/support/clock.ts).
import { type Clock, monotonicClock } from '../support/clock.ts';

/** Wraps `work` (which should not throw); the returned function resolves when a run recent enough has finished. */
export function singleFlight(work: () => Promise<void>, reuseMs: number, clock: Pick<Clock, 'now'> = monotonicClock): () => Promise<void> {
  let inFlight: Promise<void> | undefined;
  let startedAt = Number.NEGATIVE_INFINITY;
  return () => {
    if (inFlight) return inFlight;
    // From the start, not the end: a slow read must not stretch the interval between reads.
    if (clock.now() - startedAt < reuseMs) return Promise.resolve();
    startedAt = clock.now();
    const run = work().finally(() => {
      inFlight = undefined;
    });
    inFlight = run;
    return run;
  };
}

/** Wraps `work`; the returned function resolves with the result of a run that started after it was called. */
export function paced<T>(work: () => Promise<T>, intervalMs: number, clock: Pick<Clock, 'now' | 'sleep'> = monotonicClock): () => Promise<T> {
  let current: Promise<T> | undefined;
  let queued: Promise<T> | undefined;
  let startedAt = Number.NEGATIVE_INFINITY;
  const start = () => {
    startedAt = clock.now();
    const run = work().finally(() => {
      current = undefined;
    });
    current = run;
    return run;
  };
  return () => {
    if (queued) return queued;
    if (!current && clock.now() - startedAt >= intervalMs) return start();
    // A run in flight began before this caller came: the caller gets the next one.
    queued = (async () => {
      await current?.catch(() => {});
      await clock.sleep(startedAt + intervalMs - clock.now());
      queued = undefined;
      return start();
    })();
    return queued;
  };
}
