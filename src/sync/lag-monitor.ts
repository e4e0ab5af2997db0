import { isNotFound } from '../classroom/errors.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';

// How long the remote takes to show our own writes, measured all the time from the classes our
// add-class calls were answered with (ms since the answer):
// - `read`: an edit-class or get-class 404 says "at least this long"; the first read that finds the
//   class, in the run that created it with no failed call in between, says "at most this long";
// - `listing`: a listing that leaves out a class says "at least this long" (it may lag more than
//   get-class does: a search index, a cache);
// - `listing_fresh`: a listing that shows a class sent a moment before it was read says "the listing
//   is at least this fresh" (how long since the newest class it shows was sent). Not a lag sample: a
//   quiet remote's listing shows nothing new, which says nothing about its lag.
// Settling an add-class of unknown outcome leans on the largest of them (src/sync/settle.ts). Kept
// per account, per process: a new process knows nothing and waits for evidence to build up, which
// is the cheap mistake.

/** How far back samples count: a remote whose lag grew counts its new lag within this window. */
export const LAG_WINDOW_MS = 10 * 60_000;

/** The most samples kept: enough for the window at full rate, bounded in memory. */
const KEEP = 2_000;

export type LagSource = 'read' | 'listing' | 'listing_fresh';

export interface LagEstimate {
  /** The largest lag any sample in the window saw, in ms. */
  maxMs: number;
  /** Samples from edit-class and get-class. */
  samples: number;
  /** The freshest any listing read in the window was shown to be (undefined: none showed a class of ours). */
  listingFreshMs: number | undefined;
}

interface Sample {
  at: number;
  lagMs: number;
  source: LagSource;
}

export class LagMonitor {
  private samples: Sample[] = [];

  /** `clock` dates the samples, so the window forgets them (default: the monotonic clock). */
  constructor(private readonly clock: Pick<Clock, 'now'> = monotonicClock) {}

  /** A write was not visible `lagMs` after its answer (a lower bound), or was visible by then (an upper bound); or a listing's freshness. */
  record(lagMs: number, source: LagSource = 'read'): void {
    this.samples.push({ at: this.clock.now(), lagMs: Math.max(0, lagMs), source });
    if (this.samples.length > KEEP) this.samples.shift();
  }

  /** The window's samples, summarised. */
  estimate(): LagEstimate {
    const since = this.clock.now() - LAG_WINDOW_MS;
    if (this.samples.some((s) => s.at < since)) this.samples = this.samples.filter((s) => s.at >= since);
    let maxMs = 0;
    let samples = 0;
    let listingFreshMs: number | undefined;
    for (const s of this.samples) {
      if (s.source === 'listing_fresh') listingFreshMs = Math.min(listingFreshMs ?? Number.POSITIVE_INFINITY, s.lagMs);
      else maxMs = Math.max(maxMs, s.lagMs);
      if (s.source === 'read') samples += 1;
    }
    return { maxMs, samples, listingFreshMs };
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
