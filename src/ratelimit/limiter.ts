// One budget of remote calls per API key, shared by every worker process through Redis.
//
// Why not a fixed-window counter (rate-limiter-flexible's RateLimiterRedis)? A fixed window admits
// a full budget at the end of one window and another at the start of the next: up to 2R calls in
// some sliding minute, which a remote counting per sliding minute answers with 429s. Here each call
// reserves the next slot of an evenly spaced schedule (GCRA, "virtual scheduling"): any 60 s span
// holds at most R calls, and a saturated fleet uses the whole budget.
//
// Lanes share the budget in order of precedence by how far ahead each may reserve: a batch under way
// and a live one up to `maxWaitMs`, operator work two slots ahead, backfill only the next slot. So a
// live call queues behind at most one slot promised to backfill, and backfill still takes every slot
// nothing else wants. A refused caller is told when to ask again, and callers of one lane are spread
// one slot apart, so they come back one by one instead of all at once.
import type { Result } from 'ioredis';
import type { QueueLane } from '../mapping/index.ts';
import type { Redis } from '../redis/connection.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';
import { BreakerOpenError, LaneDeferredError, RateLimitWaitTooLongError } from './errors.ts';

export { BreakerOpenError, LaneDeferredError, RateLimitError, RateLimitWaitTooLongError } from './errors.ts';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** The RESERVE script below, defined on the connection by createRateLimiter. */
    classroomSyncReserve4(
      key: string,
      breakerKey: string,
      laneKey: string,
      interval: number,
      pauseUntil: number,
      horizon: number,
      spread: number,
    ): Result<[number, number], Context>;
  }
}

// KEYS[1] = schedule, KEYS[2] = credentials breaker, KEYS[3] = the lane's next "ask again" time.
// ARGV: interval ms, pause-until ms (0 = none), how far ahead this lane may reserve (ms), how many
// slots apart refused callers of a lane may be spread.
// Returns {1, wait} for a slot `wait` ms from now, {0, retry} when refused (ask again in `retry`
// ms; nothing reserved), or {-2, 0} while the credentials breaker is open. Time comes from Redis, so
// every process shares one clock.
const RESERVE = `
if tonumber(ARGV[2]) == 0 and redis.call('EXISTS', KEYS[2]) == 1 then return {-2, 0} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local pauseUntil = tonumber(ARGV[2])
local horizon = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if pauseUntil > 0 then
  if pauseUntil > tat then redis.call('SET', KEYS[1], pauseUntil, 'PX', pauseUntil - now + 60000) end
  return {1, 0}
end
local slot = math.max(tat, now)
local wait = slot - now
-- The schedule is kept in fractional ms next to a 13-digit "now": the next slot, asked for within
-- the millisecond, can come out a few ten-thousandths of a ms past a one-slot horizon.
if wait > horizon + 0.01 then
  -- Refused callers of a lane come back one slot apart, starting when the next slot can be
  -- reserved, and never more than SPREAD slots after it: a line that ran further ahead would leave
  -- slots unused while its callers sleep.
  local base = slot - horizon
  local ask = tonumber(redis.call('GET', KEYS[3]) or '0')
  if ask < base or ask > base + tonumber(ARGV[4]) * interval then ask = base end
  redis.call('SET', KEYS[3], ask + interval, 'PX', math.ceil(ask + interval - now + 60000))
  return {0, math.ceil(ask - now)}
end
redis.call('SET', KEYS[1], slot + interval, 'PX', math.ceil(slot + interval - now + 60000))
return {1, math.ceil(wait)}
`;

export type Reservation = { granted: true; waitMs: number } | { granted: false; retryInMs: number };

/** A slot `acquire` waited for: how long it slept, and when the slot came due (by the limiter's clock). */
export interface Grant {
  waitedMs: number;
  /**
   * The earliest the slot could have been due: asked-at plus the wait Redis gave. A caller that is
   * late (a stalled process, slow statements after the wait) measures its lateness from here, not
   * from when `acquire` returned, or a late wake-up would be forgiven twice.
   */
  dueAt: number;
}

export interface RateLimiter {
  /** A slot for one call of `lane`, or when to ask again; reserves nothing when refused. Never waits. */
  reserve(lane: QueueLane): Promise<Reservation>;
  /**
   * Waits for this call's slot (a live or under-way call; default lane `live`). Throws
   * RateLimitWaitTooLongError when the wait would pass `maxWaitMs`, LaneDeferredError when a lane
   * that may not reserve that far ahead is refused (nothing is sent then).
   */
  acquire(lane?: QueueLane): Promise<Grant>;
  /** Holds every process back until `ms` from now (a 429 slows the whole fleet). */
  pause(ms: number): Promise<void>;
}

export interface RateLimiterOptions {
  redis: Redis;
  /** Names the budget; one per API key. */
  key: string;
  /** The credentials breaker of the same key: while it exists, no slot is granted. */
  breakerKey?: string;
  callsPerMinute: number;
  /** The span the remote counts calls over (default a minute): it bounds how late a call may be sent. */
  windowMs?: number;
  maxWaitMs?: number;
  /**
   * How far ahead a live call may reserve (default `maxWaitMs`). Short when several accounts share
   * the worker slots: a job then waits in place for at most a couple of its own account's slots.
   */
  liveHorizonMs?: number;
  onWait?: (ms: number) => void;
  /**
   * Told about every slot granted, with the lane it was granted to (metrics). `retake` is true for a
   * fresh slot taken by a caller that overslept the one it had (see `acquire`). Must not throw.
   */
  onReserve?: (lane: QueueLane, retake: boolean) => void;
  /** What `acquire` sleeps until its slot by, and tells a late wake-up by (default: the monotonic clock). */
  clock?: Clock;
}

const HEADROOM = 0.98;
const LATE_TOLERANCE_MS = 25;
/**
 * The most a call may be sent after its slot: the budget's headroom over the window the remote
 * counts calls in (1.2 s of a minute). Slots a window apart hold 98% of the budget, so calls that
 * each arrive at most this late still make at most R in any window. A call later than one slot, and
 * later than this, takes a fresh slot: at under 50 calls a minute a slot is longer than the headroom,
 * and a late call beside an on-time one could make R + 1 in some window. The remote client holds its
 * caller's last check (a PostgreSQL write) to the same bound.
 */
export const latestSendMs = (windowMs = 60_000): number => windowMs * (1 - HEADROOM);
/** Refused callers of a lane are spread over at most this many slots (about the fleet's background slots). */
const ASK_SPREAD = 4;

export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { redis, key, breakerKey = `${key}:breaker`, callsPerMinute, maxWaitMs = 30_000, liveHorizonMs, onWait, onReserve, clock = monotonicClock } = options;
  const latest = latestSendMs(options.windowMs);
  // One definition per connection, however many accounts' limiters share it.
  if (!Reflect.has(redis, 'classroomSyncReserve4')) redis.defineCommand('classroomSyncReserve4', { numberOfKeys: 3, lua: RESERVE });
  const run: Redis['classroomSyncReserve4'] = (...args) => redis.classroomSyncReserve4(...args);
  // Calls are scheduled at 98% of the budget: requests reach the remote with a few ms of jitter
  // after their slot, and a remote counting per sliding minute must never see R + 1.
  const interval = 60_000 / (callsPerMinute * HEADROOM);
  const horizons = { ...horizonsFor(interval, maxWaitMs), ...(liveHorizonMs === undefined ? {} : { live: Math.min(liveHorizonMs, maxWaitMs) }) };

  const reserve = async (lane: QueueLane, retake = false): Promise<Reservation> => {
    const [code, ms] = (await run(key, breakerKey, `${key}:ask:${lane}`, interval, 0, horizons[lane], ASK_SPREAD)).map(Number) as [number, number];
    if (code === -2) throw new BreakerOpenError('the credentials breaker is open: the remote refuses this API key');
    if (code !== 1) return { granted: false, retryInMs: Math.max(1, ms) };
    onReserve?.(lane, retake);
    return { granted: true, waitMs: ms };
  };

  return {
    reserve,
    async acquire(lane = 'live') {
      let waitedMs = 0;
      for (let tries = 0; ; tries += 1) {
        const askedAt = clock.now();
        const reservation = await reserve(lane, tries > 0);
        if (!reservation.granted) {
          if (lane === 'live' || lane === 'under_way') throw new RateLimitWaitTooLongError(`rate limit: next free slot is more than ${maxWaitMs} ms away`);
          throw new LaneDeferredError(lane, reservation.retryInMs);
        }
        const dueAt = askedAt + reservation.waitMs;
        if (reservation.waitMs === 0) return { waitedMs, dueAt };
        onWait?.(reservation.waitMs);
        await clock.sleep(reservation.waitMs);
        waitedMs += reservation.waitMs;
        // A stalled process wakes many callers at once, their slots long past: sent together they
        // would arrive as a burst. A caller that overslept its slot by more than one interval
        // takes a fresh slot instead (bounded, so it cannot starve).
        if (clock.now() - dueAt <= Math.max(Math.min(interval, latest), LATE_TOLERANCE_MS) || tries >= 3) return { waitedMs, dueAt };
      }
    },
    async pause(ms) {
      const time = await redis.time();
      const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
      await run(key, breakerKey, `${key}:ask:live`, interval, now + Math.max(0, Math.round(ms)), maxWaitMs, ASK_SPREAD);
    },
  };
}

/** How far ahead each lane may reserve: a slot or two for the lower lanes (never less than 25 ms). */
function horizonsFor(interval: number, maxWaitMs: number): Record<QueueLane, number> {
  return {
    under_way: maxWaitMs,
    live: maxWaitMs,
    operator: Math.max(2 * interval, 2 * LATE_TOLERANCE_MS),
    backfill: Math.max(interval, LATE_TOLERANCE_MS),
  };
}
