// The fleet's copy of an institute's listing, for batches in doubt (src/sync/institute-listing.ts):
// one Redis hash per account and institute, `{readAt, listing}`, kept a moment (`ttlMs`), and a lock
// so that one process reads the listing while the others wait briefly for its copy. Keys live under
// the account's rate-limit key (`<QUEUE_PREFIX>:ratelimit:<hash>:listing:<institute>`, `…:listing-lock:…`),
// so on a Redis Cluster the prefix's {hash tag} puts both in one slot, as the script below needs.
//
// Nothing here may fail a batch: every command is bounded, a connection that is not ready is not
// asked, and any failure is a miss (the caller reads the listing itself).
import { createHash, randomBytes } from 'node:crypto';
import { type InstituteListing, listingSchema } from '../classroom/schemas.ts';
import { askBounded } from '../redis/bounded.ts';
import type { Redis } from '../redis/connection.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';

/**
 * Listings larger than this (JSON characters, about bytes) are not copied into Redis: every waiting
 * process would fetch it whole, and one large value blocks Redis while it is written or read. Such an
 * institute is marked instead, and its readers read for themselves (each process still shares its own).
 */
export const MAX_CACHED_CHARS = 1 << 20;
/** How long an institute stays marked as too large to copy. */
const TOO_LARGE_MS = 60_000;
/** The most one Redis command may take before it counts as a miss. */
const COMMAND_MS = 250;
/** How often a process waiting for another's read looks for its copy. */
const POLL_MS = 25;

export interface CachedListing {
  /** When the request left (the database's clock, ms). */
  readAt: number;
  listing: InstituteListing;
}

/** What waiting for the fleet's copy came to: a copy, the lock (read, then `publish`), or neither (read alone). */
export type FleetTurn = { copy: CachedListing } | { lock: string } | { alone: true };

export interface ListingCache {
  /** A copy read at or after `minReadAt`, or the lock, waiting at most `waitMs` while another process holds it. */
  turn(instituteId: string, minReadAt: number, waitMs: number): Promise<FleetTurn>;
  /** Stores `entry` unless a newer one is stored (or it is too large); then releases `lock` if given. */
  publish(instituteId: string, entry: CachedListing, lock?: string): Promise<void>;
  /** Releases the lock without a copy (the read failed). */
  release(instituteId: string, lock: string): Promise<void>;
}

export interface ListingCacheOptions {
  redis: Redis;
  /** The account's rate-limit key (src/ratelimit/keys.ts `budgetKey`). */
  accountKey: string;
  /** How long a copy is kept: past it, no reader would take it as fresh. */
  ttlMs: number;
  /** How long the lock lasts if its holder never releases it (it died): past it, another reads. */
  lockMs?: number;
  /** Larger listings are not copied (default MAX_CACHED_CHARS). */
  maxChars?: number;
  clock?: Pick<Clock, 'now' | 'sleep'>;
  /** Told about every failed command (the caller reads for itself then). */
  onError?: (error: unknown) => void;
}

// KEYS[1] = the copy, KEYS[2] = the lock. ARGV: the oldest readAt taken, a lock token, the lock's ms.
// {1, readAt, listing}: a copy; {2}: the lock is the caller's; {3}: too large to copy; {0}: held by another.
const TURN = `
local found = redis.call('HMGET', KEYS[1], 'readAt', 'listing', 'tooLarge')
if found[3] then return {3} end
if found[1] and found[2] and tonumber(found[1]) >= tonumber(ARGV[1]) then return {1, found[1], found[2]} end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return {2} end
return {0}
`;

// KEYS[1] = the copy, KEYS[2] = the lock. ARGV: readAt, listing ('' = too large), ttl ms, lock token ('' = none).
const PUBLISH = `
if ARGV[2] == '' then
  redis.call('HSET', KEYS[1], 'tooLarge', '1')
  redis.call('PEXPIRE', KEYS[1], ${TOO_LARGE_MS})
elseif tonumber(redis.call('HGET', KEYS[1], 'readAt') or '-1') < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'readAt', ARGV[1], 'listing', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
if ARGV[4] ~= '' and redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('DEL', KEYS[2]) end
return 1
`;

// KEYS[2] = the lock. ARGV[1]: the token it was taken with (another's lock is left alone).
const RELEASE = `
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
`;

export function createListingCache(options: ListingCacheOptions): ListingCache {
  const { redis, accountKey, ttlMs, lockMs = 5_000, maxChars = MAX_CACHED_CHARS, clock = monotonicClock, onError } = options;
  const keys = (instituteId: string): [string, string] => {
    const name = /^[A-Za-z0-9_-]{1,64}$/.test(instituteId) ? instituteId : createHash('sha256').update(instituteId).digest('hex').slice(0, 16);
    return [`${accountKey}:listing:${name}`, `${accountKey}:listing-lock:${name}`];
  };
  const run = (script: string, instituteId: string, args: (string | number)[]): Promise<unknown[] | undefined> =>
    askBounded(redis, COMMAND_MS, 'the listing cache', () => redis.eval(script, 2, ...keys(instituteId), ...args) as Promise<unknown[]>, onError);
  return {
    async turn(instituteId, minReadAt, waitMs) {
      const token = randomBytes(8).toString('hex');
      const until = clock.now() + waitMs;
      for (;;) {
        const answer = await run(TURN, instituteId, [Math.ceil(minReadAt), token, lockMs]);
        if (!answer || answer[0] === 3) return { alone: true };
        if (answer[0] === 2) return { lock: token };
        const copy = answer[0] === 1 ? decode(answer[1], answer[2]) : undefined;
        if (copy) return { copy };
        if (answer[0] === 1 || clock.now() + POLL_MS > until) return { alone: true };
        await clock.sleep(POLL_MS);
      }
    },
    async publish(instituteId, entry, lock = '') {
      const json = JSON.stringify(compact(entry.listing));
      const listing = json.length > maxChars ? '' : json;
      await run(PUBLISH, instituteId, [Math.floor(entry.readAt), listing, Math.max(1, Math.round(ttlMs)), lock]);
    },
    async release(instituteId, lock) {
      await run(RELEASE, instituteId, [lock]);
    },
  };
}

/** Only what settling reads of each listed class (src/sync/resolve.ts): its `_id` and name. */
function compact(listing: InstituteListing): InstituteListing {
  const pick = (items: InstituteListing['classes']) => items.map(({ _id, name }) => (_id === undefined ? { name } : { _id, name }));
  return { classes: pick(listing.classes), pendingClasses: pick(listing.pendingClasses), hiddenClasses: pick(listing.hiddenClasses) };
}

/** A stored copy, checked as the client checks an answer; undefined when it is not one. */
function decode(readAt: unknown, json: unknown): CachedListing | undefined {
  const at = Number(readAt);
  if (!Number.isFinite(at) || typeof json !== 'string') return undefined;
  try {
    const parsed = listingSchema.safeParse(JSON.parse(json));
    return parsed.success ? { readAt: at, listing: parsed.data } : undefined;
  } catch {
    return undefined;
  }
}
