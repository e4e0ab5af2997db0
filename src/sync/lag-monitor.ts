import { isNotFound } from '../classroom/errors.ts';

// How long the remote takes to show our own writes, measured all the time from the classes our
// add-class calls were answered with: each edit-class or get-class 404 for such a class, and each
// class a listing leaves out, says "at least this long" (ms since the add-class answer); the first
// read that finds a class, in the run that created it with no failed call in between, says "at most
// this long". Settling an add-class of unknown outcome leans on the largest of them
// (src/sync/settle.ts). Kept per account, per process: a new process knows nothing and waits for
// the evidence to build up, which is the cheap mistake.

/** How far back samples count: a remote whose lag grew counts its new lag within this window. */
export const LAG_WINDOW_MS = 10 * 60_000;

/** The most samples kept: enough for the window at full rate, bounded in memory. */
const KEEP = 2_000;

export interface LagEstimate {
  /** The largest lag any sample in the window saw, in ms. */
  maxMs: number;
  /** How many samples the window holds. */
  samples: number;
}

export class LagMonitor {
  private readonly at: number[] = [];
  private readonly lagMs: number[] = [];

  constructor(private readonly clock: () => number = () => performance.now()) {}

  /** A write was not visible `lagMs` after its answer (a lower bound), or was visible by then (an upper bound). */
  record(lagMs: number): void {
    this.at.push(this.clock());
    this.lagMs.push(Math.max(0, lagMs));
    if (this.at.length > KEEP) {
      this.at.shift();
      this.lagMs.shift();
    }
  }

  /** The window's samples, summarised; samples 0 when there are none. */
  estimate(): LagEstimate {
    const since = this.clock() - LAG_WINDOW_MS;
    let first = 0;
    while (first < this.at.length && (this.at[first] ?? 0) < since) first += 1;
    if (first > 0) {
      this.at.splice(0, first);
      this.lagMs.splice(0, first);
    }
    return { maxMs: this.lagMs.reduce((max, lag) => Math.max(max, lag), 0), samples: this.lagMs.length };
  }
}

/**
 * After edit-class or get-class about a class our add-class was answered with (at `ackedAt`, the
 * database's clock; `now` likewise): a 404 says the remote has not shown it for this long yet; the
 * first success while `measuring` (no failed call since this run's add-class answer) says it had by
 * now. Any other failure ends the measuring: a retry later would count its backoff as lag. Returns
 * whether the run is still measuring.
 */
export function observeRead(monitor: LagMonitor | undefined, ackedAt: Date | null, now: number, measuring: boolean, error?: unknown): boolean {
  if (!ackedAt || !monitor) return false;
  const sinceAck = now - ackedAt.getTime();
  if (error === undefined) {
    if (measuring) monitor.record(sinceAck);
    return false;
  }
  if (isNotFound(error)) {
    monitor.record(sinceAck);
    return measuring;
  }
  return false;
}
