// One listing settles many (issue #39): batches of one institute whose add-class is in doubt each
// need the institute's whole listing (src/sync/resolve.ts), and one listing answers for all of them.
// So within a process one listing call per institute is in flight at a time, and the batches that
// arrive meanwhile share its answer; across processes, a copy in Redis and a lock (listing-cache.ts)
// let one process read while the others wait briefly for its copy.
//
// What makes sharing sound is the one rule the settle step already relies on: a listing is weighed
// at the time its request left (`readAt`, the database's clock, taken right before it is sent), never
// at the time a batch looks at it (src/sync/settle.ts). So a batch may use any listing read at or
// after the earliest time it may read (`notBefore`: its add-class's `createSentAt` + SYNC_SETTLE, as
// the settle delay allows): a listing read before its add-class was sent cannot show its class, and
// is never used for it. How old a listing may be is a matter of cost, not of soundness (below).
import type { CallOptions, ClassroomClient } from '../classroom/client.ts';
import { isClassroomError } from '../classroom/errors.ts';
import type { InstituteListing } from '../classroom/schemas.ts';
import type { Logger } from '../logging/logger.ts';
import { type BudgetOwner, budgetKey } from '../ratelimit/keys.ts';
import type { Redis } from '../redis/connection.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';
import { type CachedListing, type ListingCache, createListingCache } from './listing-cache.ts';
import { listedIds } from './resolve.ts';

/**
 * How old a listing read earlier may be and still be taken by a batch that arrives later: 1 s, the
 * shortest interval at which the settle step reads again while "not listed" is not believed yet
 * (settle.ts's POLL_MIN_MS). Older, it is a listing that batch's own schedule already wants read
 * again; and a batch judged on a listing it does not believe waits until that listing is this old
 * (`retryInMs`), so a short window also bounds that extra wait. A caller that joins a call still in
 * flight takes its answer however long the call took.
 */
export const LISTING_FRESH_MS = 1_000;
/** How long a process waits for another's read of the same listing (then it reads itself). */
export const FLEET_WAIT_MS = 1_000;
/** Waits for a call sent too early for a caller, before it reads on its own. */
const MAX_ROUNDS = 5;

export interface ListingRequest {
  instituteId: string;
  /** The earliest a listing this caller uses may have been read (the database's clock, ms). */
  notBefore: number;
  /** The database's clock, as the caller's run keeps it. */
  now: () => number;
  /** Sends the listing call; `sent` must be called right before the request leaves (its `beforeSend`). */
  read: (sent: () => void) => Promise<InstituteListing>;
  /** True when the caller's own read failed for a reason of its own (its lease was lost): not shared. */
  stopped?: () => boolean;
}

export interface SharedListing {
  /** When the request left, by the database's clock: what the settle step weighs it at. */
  readonly readAt: number;
  readonly listing: InstituteListing;
  /** Every `_id` it holds, in any list. */
  readonly listed: ReadonlySet<string>;
  /** True once, for the first caller, when this process read it: that caller records its lag samples. */
  takeSamples(): boolean;
  /** When a batch judged on it and not settled reads again: not before no one would hand it this listing again. */
  retryInMs(retryInMs: number, now: number): number;
}

export interface InstituteListings {
  /** The institute's listing for one batch in doubt; throws what its listing call threw. */
  get(request: ListingRequest): Promise<SharedListing>;
}

export interface InstituteListingsDeps {
  /** The fleet's copies (an account's: src/sync/listing-cache.ts); none: shared within this process only. */
  cache?: ListingCache | undefined;
  freshMs?: number;
  fleetWaitMs?: number;
  /** Forgets a finished read once it is no longer fresh. */
  clock?: Pick<Clock, 'after'>;
}

type Outcome = { ok: true; listing: SharedListing } | { ok: false; error: unknown; shared: boolean };

/** One read of an institute's listing (or the fleet's copy of one), shared by whoever joins it. */
class Flight {
  /** When its request left (or the copy's), once known. */
  readAt: number | undefined;
  /** Its outcome, once it has one. */
  done: Outcome | undefined;
  readonly outcome: Promise<Outcome>;

  constructor(read: (sent: (readAt: number) => void) => Promise<Outcome>) {
    this.outcome = read((readAt) => {
      this.readAt = readAt;
    }).then((outcome) => {
      this.done = outcome;
      return outcome;
    });
  }
}

export function createInstituteListings(deps: InstituteListingsDeps = {}): InstituteListings {
  const { cache, freshMs = LISTING_FRESH_MS, fleetWaitMs = FLEET_WAIT_MS, clock = monotonicClock } = deps;
  const sharing: Sharing = { cache, freshMs, fleetWaitMs };
  const flights = new Map<string, Flight>();

  const start = (request: ListingRequest): Flight => {
    const flight = new Flight((sent) => readShared(request, sharing, sent));
    flights.set(request.instituteId, flight);
    const forget = () => flights.get(request.instituteId) === flight && flights.delete(request.instituteId);
    void flight.outcome.then((outcome) => (outcome.ok ? clock.after(freshMs, forget) : forget()));
    return flight;
  };
  // A finished read a caller arriving now may take: read after its `notBefore`, and fresh.
  const usable = (done: Outcome, request: ListingRequest) =>
    done.ok && done.listing.readAt >= request.notBefore && request.now() - done.listing.readAt <= freshMs;

  return {
    async get(request) {
      for (let round = 0; round < MAX_ROUNDS; round += 1) {
        const current = flights.get(request.instituteId);
        if (current && !current.done && current.readAt !== undefined && current.readAt < request.notBefore) {
          // Sent before this batch may read: one call at a time, so it shares the next one.
          await current.outcome;
          continue;
        }
        const joined = current !== undefined && (!current.done || usable(current.done, request));
        const outcome = await (joined ? current : start(request)).outcome;
        if (outcome.ok && outcome.listing.readAt >= request.notBefore) return outcome.listing;
        // A failure of the listing is every caller's; one of the reader's own (its lease) is not.
        if (!outcome.ok && (!joined || outcome.shared)) throw outcome.error;
      }
      const outcome = await readShared(request, sharing, () => {});
      if (outcome.ok) return outcome.listing;
      throw outcome.error;
    },
  };
}

/** An account's shared listings, its copies in Redis under its rate-limit key (one per account and process). */
export function accountListings(redis: Redis, owner: BudgetOwner, logger: Pick<Logger, 'debug'>): InstituteListings {
  const onError = (error: unknown) => logger.debug({ err: error }, 'the shared listing copy in Redis failed; reading the listing without it');
  return createInstituteListings({ cache: accountListingCache(redis, owner, onError) });
}

/** The account's copies of its institutes' listings, kept as long as a batch would take one as fresh. */
export function accountListingCache(redis: Redis, owner: BudgetOwner, onError?: (error: unknown) => void): ListingCache {
  return createListingCache({ redis, accountKey: budgetKey(owner), ttlMs: LISTING_FRESH_MS, ...(onError ? { onError } : {}) });
}

/** The listing read by this caller alone (a run with no `InstituteListings`): nothing shared. */
export async function readAlone(request: ListingRequest): Promise<SharedListing> {
  let readAt = request.now();
  const listing = await request.read(() => {
    readAt = request.now();
  });
  return shareable({ readAt, listing }, true, Number.NEGATIVE_INFINITY);
}

interface Sharing {
  cache: ListingCache | undefined;
  freshMs: number;
  fleetWaitMs: number;
}

/**
 * One flight: the fleet's fresh copy, else a read of our own (under the fleet's lock when we got it),
 * published; `sent` learns its `readAt` as soon as it is known. Never rejects.
 */
async function readShared(request: ListingRequest, { cache, freshMs, fleetWaitMs }: Sharing, sent: (readAt: number) => void): Promise<Outcome> {
  const { instituteId } = request;
  const minReadAt = Math.max(request.notBefore, request.now() - freshMs);
  const turn = cache ? await cache.turn(instituteId, minReadAt, fleetWaitMs) : undefined;
  if (turn && 'copy' in turn) {
    sent(turn.copy.readAt);
    // Another process read it and recorded its lag samples.
    return { ok: true, listing: shareable(turn.copy, false, turn.copy.readAt + freshMs) };
  }
  const lock = turn && 'lock' in turn ? turn.lock : undefined;
  let readAt = request.now();
  try {
    const listing = await request.read(() => {
      readAt = request.now();
      sent(readAt);
    });
    const entry = { readAt, listing };
    // Not awaited: the copy is for other processes (bounded, and it never throws).
    if (cache) void cache.publish(instituteId, entry, lock);
    return { ok: true, listing: shareable(entry, true, readAt + freshMs) };
  } catch (error) {
    if (cache && lock !== undefined) void cache.release(instituteId, lock);
    return { ok: false, error, shared: sharedFailure(error, request) };
  }
}

/**
 * Whether callers that joined a failed read throw its error, as each would have thrown had it read
 * itself (a 404, a refusal, a 5xx, a timeout): a failure of the remote. The reader's own stop (its
 * lease lost, a write that failed before sending) and a lane's yielding to live work are not theirs:
 * they read again.
 */
function sharedFailure(error: unknown, request: ListingRequest): boolean {
  if (request.stopped?.() || !isClassroomError(error)) return false;
  return !(error.kind === 'not_sent' && error.reason === 'lane_deferred');
}

function shareable(entry: CachedListing, readHere: boolean, staleAt: number): SharedListing {
  let samples = readHere;
  return {
    readAt: entry.readAt,
    listing: entry.listing,
    listed: listedIds(entry.listing),
    takeSamples() {
      const take = samples;
      samples = false;
      return take;
    },
    retryInMs: (retryInMs, now) => Math.max(retryInMs, staleAt - now + 1),
  };
}

/** What of a run the listing of its batch's institute needs (src/sync/steps.ts `resolveCreate`). */
export interface ListingRun {
  readonly current: { instituteId: string };
  readonly lag: { now(): number };
  readonly deps: { classroom: Pick<ClassroomClient, 'listClasses'>; listings?: InstituteListings | undefined };
  callOptions(): CallOptions;
}

/** The listing for `run`'s batch in doubt: shared through `deps.listings` when the run has it, else read alone. */
export function listingFor(run: ListingRun, notBefore: number): Promise<SharedListing> {
  const { instituteId } = run.current;
  let signal: AbortSignal | undefined;
  const request: ListingRequest = {
    instituteId,
    notBefore,
    now: () => run.lag.now(),
    read: (sent) => {
      // The options are taken only by the caller that sends: a slot reserved for the run's first call stays its own.
      const options = run.callOptions();
      signal = options.signal;
      const beforeSend = async () => {
        await options.beforeSend?.();
        sent();
      };
      return run.deps.classroom.listClasses(instituteId, {}, { ...options, beforeSend });
    },
    stopped: () => signal?.aborted === true,
  };
  return run.deps.listings ? run.deps.listings.get(request) : readAlone(request);
}
