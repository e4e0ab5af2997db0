// A clock a test moves by hand (src/support/clock.ts's Clock): `now()` stands still until
// `advance(ms)`, which wakes the sleeps and timers that come due, in order, letting the work each
// wakes run (its promise callbacks) before the next. Nothing here waits for real time.
import type { Clock } from '../../src/support/clock.ts';

export interface ManualClock extends Clock {
  /** Every sleep asked for, in order. */
  readonly sleeps: number[];
  /** Moves the time `ms` on, waking each sleep and timer due by then in turn. */
  advance(ms: number): Promise<void>;
  /**
   * Moves the time `ms` on and wakes nothing: a process frozen that long (SIGSTOP, a long pause). The
   * next `advance` wakes what came due meanwhile, late, as a thawed process's timers fire.
   */
  jump(ms: number): void;
  /** Sleeps and timers not yet due. */
  pending(): number;
  /** How far off each of them is due, soonest first. */
  dueIn(): number[];
}

interface Timer {
  at: number;
  order: number;
  fire: () => void;
}

/** Lets the promise callbacks queued so far (and those they queue) run. */
const drainCallbacks = () => new Promise<void>((resolve) => setImmediate(resolve));

export function manualClock(start = 0): ManualClock {
  let t = start;
  let order = 0;
  const timers: Timer[] = [];
  const sleeps: number[] = [];
  const after = (ms: number, fire: () => void) => {
    const timer = { at: t + Math.max(0, ms), order: order++, fire };
    timers.push(timer);
    return () => {
      const at = timers.indexOf(timer);
      if (at >= 0) timers.splice(at, 1);
    };
  };
  const nextDue = (until: number) => timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at || a.order - b.order)[0];
  return {
    sleeps,
    now: () => t,
    after,
    sleep(ms) {
      sleeps.push(ms);
      return ms > 0 ? new Promise((resolve) => after(ms, resolve)) : Promise.resolve();
    },
    async advance(ms) {
      const until = t + ms;
      await drainCallbacks();
      for (let timer = nextDue(until); timer; timer = nextDue(until)) {
        timers.splice(timers.indexOf(timer), 1);
        t = Math.max(t, timer.at); // a timer that came due during a jump fires now, late
        timer.fire();
        await drainCallbacks();
      }
      t = until;
    },
    jump(ms) {
      t += ms;
    },
    pending: () => timers.length,
    dueIn: () => timers.map((timer) => timer.at - t).sort((a, b) => a - b),
  };
}
