import type { Result } from 'ioredis';
import { type BudgetOwner, lagKey } from '../ratelimit/keys.ts';
import { askBounded } from '../redis/bounded.ts';
import type { Redis } from '../redis/connection.ts';
import { READ_LAG_PATIENCE } from './read-lag.ts';

// How long the remote takes to show our own writes, kept per account in Redis so every process of
// the fleet (and one started a minute ago) knows what the others measured. Two things are kept in
// one hash, `<budget key>:lag`, which ages out as a whole LAG_WINDOW_MS after its last write:
//
// - evidence for settling an add-class of unknown outcome (src/sync/settle.ts), in 10-second
//   buckets of the window: ms since the add-class answer at which
//   - `read`: an edit-class or get-class 404 said "at least this long", or the first read that found
//     the class said "at most this long";
//   - `listing`: a listing that left out a class said "at least this long";
//   - `listing_fresh`: a listing that showed a class sent a moment before it was read said "the
//     listing is at least this fresh". Not a lag sample: a quiet remote's listing shows nothing new.
// - when to read (src/sync/read-schedule.ts): per kind of read (`class`: a class our add-class
//   made; `link`: a join link our edit-class enabled), how long after the write a read is sent. Every
//   read's outcome moves it, as a stochastic approximation of a high quantile of the lag: a read that
//   did not find its write sets it to at least twice the age it failed at (the lag was longer than
//   that; reads sent together and failing together double it once, not once each), one that did
//   shortens it by SHRINK, so it comes to rest where about one read in READ_EARLY_SHARE⁻¹ is sent
//   too early, with the doubling as its margin. Only outcomes count, never the age of a success: a
//   read sent late succeeds late, and taking that as the lag would let the target creep up.
//
// Time comes from Redis (TIME), so processes whose clocks differ share one window. A Redis failure
// reads as "nothing known": a read goes out at once (a call that may find nothing), and settling has
// no measured evidence (it waits for another kind); both are the cheap mistake.

/** How far back samples count: a remote whose lag grew counts its new lag within this window. */
export const LAG_WINDOW_MS = 10 * 60_000;

/** A read that found nothing sets the delay to at least this many times its age (its own re-read waits as long again). */
const GROW = 2;
/** What a read that found its write multiplies the delay by. */
const SHRINK = 0.9875;
/** The share of reads sent too early where the delay comes to rest: a step up balances this many steps down. */
export const READ_EARLY_SHARE = Math.log(1 / SHRINK) / (Math.log(GROW) + Math.log(1 / SHRINK));
/** A target shorter than this is no wait at all: a read is sent at once. */
const TARGET_FLOOR_MS = 50;
/** Buckets of the settle evidence. */
const BUCKET_MS = 10_000;

export type LagSource = 'read' | 'listing' | 'listing_fresh';
export type ReadKind = 'class' | 'link';

export interface LagEstimate {
  /** The largest lag any sample in the window saw, in ms. */
  maxMs: number;
  /** Samples from edit-class and get-class. */
  samples: number;
  /** The freshest any listing read in the window was shown to be (undefined: none showed a class of ours). */
  listingFreshMs: number | undefined;
}

export interface LagMonitor {
  /** How long after its write a read of `kind` is sent (0: at once). */
  readDelay(kind: ReadKind): Promise<number>;
  /**
   * A read of `kind` sent `ageMs` after its write (`writeId`: the class's id) found it (`visible`) or
   * not; moves the target and, with `sample`, records the age as settle evidence. Returns the new target.
   */
  readOutcome(kind: ReadKind, ageMs: number, visible: boolean, sample: boolean, writeId?: string): Promise<number>;
  /**
   * The write was not lagging but gone (a class the remote no longer knows, a join link that did not
   * stick): when it raised the delay last, its raises are taken back.
   */
  forget(kind: ReadKind, writeId: string): Promise<void>;
  /** Settle evidence from a listing (or, for tests, a read). */
  record(lagMs: number, source: LagSource): Promise<void>;
  /** The window's evidence, summarised; undefined when it could not be read. */
  estimate(): Promise<LagEstimate | undefined>;
}

// KEYS[1] the hash. ARGV: now ('' = Redis TIME), window, bucket, then the operation's own.
const NOW = `
local now = tonumber(ARGV[1])
if not now then local t = redis.call('TIME'); now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end
local bucket = math.floor(now / tonumber(ARGV[3]))
`;

// Records one sample (ARGV[4] source, ARGV[5] ms) in the current bucket.
const RECORD = `
local function record(source, ms)
  local b = 'b:' .. bucket .. ':'
  if redis.call('HEXISTS', KEYS[1], b .. 'n') == 0 then
    local oldest = bucket - math.floor(tonumber(ARGV[2]) / tonumber(ARGV[3])) - 1
    for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
      local idx = tonumber(string.match(field, '^b:(%d+):'))
      if idx and idx < oldest then redis.call('HDEL', KEYS[1], field) end
    end
    redis.call('HSET', KEYS[1], b .. 'n', 0)
  end
  if source == 'listing_fresh' then
    local fresh = tonumber(redis.call('HGET', KEYS[1], b .. 'fresh'))
    if not fresh or ms < fresh then redis.call('HSET', KEYS[1], b .. 'fresh', ms) end
  else
    local max = tonumber(redis.call('HGET', KEYS[1], b .. 'max'))
    if not max or ms > max then redis.call('HSET', KEYS[1], b .. 'max', ms) end
    if source == 'read' then redis.call('HINCRBY', KEYS[1], b .. 'n', 1) end
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
`;

const RECORD_SCRIPT = `${NOW}${RECORD}
record(ARGV[4], tonumber(ARGV[5]))
return 1`;

// ARGV[4] kind, [5] age ms, [6] visible 1/0, [7] sample 1/0, [8] floor, [9] grow, [10] shrink, [11] cap,
// [12] the write's id. The write that raised the delay last, and the delay before its raises, are
// kept so that a verdict that the write is gone (not lagging) can take its raises back (FORGET).
const OUTCOME_SCRIPT = `${NOW}${RECORD}
local field = 'target:' .. ARGV[4]
local target = tonumber(redis.call('HGET', KEYS[1], field)) or 0
local age = tonumber(ARGV[5])
if ARGV[6] == '1' then
  target = target * tonumber(ARGV[10])
  if target < tonumber(ARGV[8]) then target = 0 end
else
  if redis.call('HGET', KEYS[1], 'raiser:' .. ARGV[4]) ~= ARGV[12] then
    redis.call('HSET', KEYS[1], 'raiser:' .. ARGV[4], ARGV[12], 'base:' .. ARGV[4], tostring(target))
  end
  target = math.min(tonumber(ARGV[11]), math.max(target, math.max(age, tonumber(ARGV[8])) * tonumber(ARGV[9])))
end
redis.call('HSET', KEYS[1], field, tostring(target))
if ARGV[7] == '1' then record('read', age) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return tostring(target)`;

// ARGV[1] kind, [2] the write's id: when it raised the delay last, the delay goes back to what it was
// before (or stays lower, if successes have brought it down since).
const FORGET_SCRIPT = `
if redis.call('HGET', KEYS[1], 'raiser:' .. ARGV[1]) ~= ARGV[2] then return 0 end
local base = tonumber(redis.call('HGET', KEYS[1], 'base:' .. ARGV[1])) or 0
local target = tonumber(redis.call('HGET', KEYS[1], 'target:' .. ARGV[1])) or 0
redis.call('HSET', KEYS[1], 'target:' .. ARGV[1], tostring(math.min(target, base)))
redis.call('HDEL', KEYS[1], 'raiser:' .. ARGV[1], 'base:' .. ARGV[1])
return 1`;

// Returns {max, samples, fresh or -1} over the buckets wholly inside the window.
const ESTIMATE_SCRIPT = `${NOW}
local first = math.ceil((now - tonumber(ARGV[2])) / tonumber(ARGV[3]))
local max, n, fresh = 0, 0, -1
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local idx, what = string.match(all[i], '^b:(%d+):(%a+)$')
  if idx and tonumber(idx) >= first then
    local v = tonumber(all[i + 1])
    if what == 'max' and v > max then max = v end
    if what == 'n' then n = n + v end
    if what == 'fresh' and (fresh < 0 or v < fresh) then fresh = v end
  end
end
return {max, n, fresh}`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    classroomSyncLagRecord(key: string, now: string, window: number, bucket: number, source: string, ms: number): Result<number, Context>;
    classroomSyncLagOutcome(key: string, ...args: Array<string | number>): Result<string, Context>;
    classroomSyncLagEstimate(key: string, now: string, window: number, bucket: number): Result<number[], Context>;
    classroomSyncLagForget(key: string, kind: string, writeId: string): Result<number, Context>;
  }
}

export interface LagMonitorOptions {
  redis: Redis;
  /** The hash's key: `<budget key>:lag` (src/ratelimit/keys.ts `lagKey`). */
  key: string;
  /** The longest a read is ever put off: the read-lag patience (SYNC_READ_LAG × READ_LAG_PATIENCE). */
  maxDelayMs: number;
  /** Epoch ms for the window (tests); default Redis's own TIME. */
  now?: () => number;
}

export function createLagMonitor(options: LagMonitorOptions): LagMonitor {
  const { redis, key, maxDelayMs } = options;
  if (!Reflect.has(redis, 'classroomSyncLagRecord')) {
    redis.defineCommand('classroomSyncLagRecord', { numberOfKeys: 1, lua: RECORD_SCRIPT });
    redis.defineCommand('classroomSyncLagOutcome', { numberOfKeys: 1, lua: OUTCOME_SCRIPT });
    redis.defineCommand('classroomSyncLagEstimate', { numberOfKeys: 1, lua: ESTIMATE_SCRIPT });
    redis.defineCommand('classroomSyncLagForget', { numberOfKeys: 1, lua: FORGET_SCRIPT });
  }
  const now = () => (options.now ? String(options.now()) : '');
  return {
    async readDelay(kind) {
      const target = await bounded(redis, () => redis.hget(key, `target:${kind}`));
      return Math.min(maxDelayMs, Math.max(0, Number(target ?? 0) || 0));
    },
    async readOutcome(kind, ageMs, visible, sample, writeId = '') {
      const age = Math.max(0, Math.round(ageMs));
      const args = [now(), LAG_WINDOW_MS, BUCKET_MS, kind, age, visible ? 1 : 0, sample ? 1 : 0, TARGET_FLOOR_MS, GROW, SHRINK, maxDelayMs, writeId];
      const target = await bounded(redis, () => redis.classroomSyncLagOutcome(key, ...args));
      return Number(target ?? 0) || 0;
    },
    async forget(kind, writeId) {
      await bounded(redis, () => redis.classroomSyncLagForget(key, kind, writeId));
    },
    async record(lagMs, source) {
      await bounded(redis, () => redis.classroomSyncLagRecord(key, now(), LAG_WINDOW_MS, BUCKET_MS, source, Math.max(0, Math.round(lagMs))));
    },
    async estimate() {
      const read = await bounded(redis, () => redis.classroomSyncLagEstimate(key, now(), LAG_WINDOW_MS, BUCKET_MS));
      if (!read) return undefined;
      const [maxMs = 0, samples = 0, fresh = -1] = read.map(Number);
      return { maxMs, samples, listingFreshMs: fresh < 0 ? undefined : fresh };
    },
  };
}

/** The account's monitor: its hash under the key's budget; no read put off past the read-lag patience. */
export function accountLagMonitor(redis: Redis, owner: BudgetOwner, readLagMs: number): LagMonitor {
  return createLagMonitor({ redis, key: lagKey(owner), maxDelayMs: READ_LAG_PATIENCE * readLagMs });
}

/** The longest a run waits for Redis here: past it, nothing is known (the cheap mistake), and the run goes on. */
const COMMAND_MS = 250;

const bounded = <T>(redis: Redis, command: () => Promise<T>) => askBounded(redis, COMMAND_MS, 'the read-lag monitor', command);
