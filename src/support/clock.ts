// The one shape of "what time is it, and wake me later" this codebase takes. Logic that depends on
// time (the lease keeper, read lag, settling, backoff, the sign-in throttle, scrape pacing) is
// handed a Clock, defaulting to a real one, so a test drives its time instead of waiting for it.
//
// The real clocks read the globals at each call, never once at import: vitest's fake timers
// (`vi.useFakeTimers()`) replace `performance`, `Date` and `setTimeout`, and drive them too.

export interface Clock {
  /** Milliseconds. Only differences mean anything, unless the clock says otherwise (systemClock: epoch ms). */
  now(): number;
  /** Resolves `ms` later by this clock (at once when `ms` ≤ 0). */
  sleep(ms: number): Promise<void>;
  /** Calls `fn` `ms` later by this clock; the returned function cancels it. Never keeps the process alive. */
  after(ms: number, fn: () => void): () => void;
}

const sleep = (ms: number): Promise<void> => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

function after(ms: number, fn: () => void): () => void {
  const timer = setTimeout(fn, Math.max(0, ms));
  timer.unref?.();
  return () => clearTimeout(timer);
}

/**
 * `performance.now()`: only moves forward, whatever happens to the system's time. For durations
 * and deadlines within one process (a lease's local deadline, a wait, an interval).
 */
export const monotonicClock: Clock = { now: () => performance.now(), sleep, after };

/**
 * `Date.now()`: epoch ms. For times compared with dates or shared with other processes (a cookie's
 * expiry, a Retry-After date, a count kept in Redis for the whole fleet).
 */
export const systemClock: Clock = { now: () => Date.now(), sleep, after };

/**
 * Another clock's time from one reading of it (`reading`, taken just before this call), advanced by
 * `clock` (the monotonic one unless given another): the database's clock as a run or a pass keeps it
 * without asking again. It trails the other clock by however long the reading took to arrive.
 */
export function clockFrom(reading: Date, clock: Pick<Clock, 'now'> = monotonicClock): () => number {
  const local = clock.now();
  return () => reading.getTime() + (clock.now() - local);
}
