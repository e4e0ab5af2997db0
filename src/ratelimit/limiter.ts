// One budget of remote calls per API key, shared by every worker process through Redis.
//
// Why not a fixed-window counter (rate-limiter-flexible's RateLimiterRedis)? A fixed window admits
// a full budget at the end of one window and another at the start of the next: up to 2R calls in
// some sliding minute, which a remote counting per sliding minute answers with 429s. Here each call
// reserves the next slot of an evenly spaced schedule (GCRA, "virtual scheduling"): any 60 s span
// holds at most R calls, and a saturated fleet uses the whole budget.
import type { Redis } from '../redis.ts';

// KEYS[1] = schedule key. ARGV: interval ms, pause-until ms (0 = none), max wait ms.
// Returns the ms the caller must wait before its slot, or -1 when the wait would exceed max wait
// (nothing reserved then). Time comes from Redis, so every process shares one clock.
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local pauseUntil = tonumber(ARGV[2])
local maxWait = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if pauseUntil > 0 then
  if pauseUntil > tat then redis.call('SET', KEYS[1], pauseUntil, 'PX', pauseUntil - now + 60000) end
  return 0
end
local slot = math.max(tat, now)
local wait = slot - now
if wait > maxWait then return -1 end
redis.call('SET', KEYS[1], slot + interval, 'PX', math.ceil(slot + interval - now + 60000))
return math.ceil(wait)
`;

export interface RateLimiter {
  /** Waits for this call's slot. Throws when the wait would pass `maxWaitMs` (nothing is sent then). */
  acquire(operation?: string): Promise<number>;
  /** Holds every process back until `ms` from now (a 429 slows the whole fleet). */
  pause(ms: number): Promise<void>;
}

export class RateLimitWaitTooLongError extends Error {
  override readonly name = 'RateLimitWaitTooLongError';
}

export interface RateLimiterOptions {
  redis: Redis;
  /** Names the budget; one per API key. */
  key: string;
  callsPerMinute: number;
  maxWaitMs?: number;
  onWait?: (ms: number) => void;
}

const HEADROOM = 0.98;
const LATE_TOLERANCE_MS = 25;

type ReserveFn = (key: string, interval: number, pauseUntil: number, maxWait: number) => Promise<number>;

export function createRateLimiter({ redis, key, callsPerMinute, maxWaitMs = 30_000, onWait }: RateLimiterOptions): RateLimiter {
  if (!('classroomSyncReserve' in redis)) {
    redis.defineCommand('classroomSyncReserve', { numberOfKeys: 1, lua: RESERVE });
  }
  const reserve = (redis as unknown as { classroomSyncReserve: ReserveFn }).classroomSyncReserve.bind(redis);
  // Calls are scheduled at 98% of the budget: requests reach the remote with a few ms of jitter
  // after their slot, and a remote counting per sliding minute must never see R + 1.
  const interval = 60_000 / (callsPerMinute * HEADROOM);

  return {
    async acquire() {
      let waited = 0;
      for (let tries = 0; ; tries += 1) {
        const wait = Number(await reserve(key, interval, 0, maxWaitMs));
        if (wait < 0) throw new RateLimitWaitTooLongError(`rate limit: next free slot is more than ${maxWaitMs} ms away`);
        if (wait === 0) return waited;
        onWait?.(wait);
        const due = performance.now() + wait;
        await new Promise((resolve) => setTimeout(resolve, wait));
        waited += wait;
        // A stalled process wakes many callers at once, their slots long past: sent together they
        // would arrive as a burst. A caller that overslept its slot by more than one interval
        // takes a fresh slot instead (bounded, so it cannot starve).
        if (performance.now() - due <= Math.max(interval, LATE_TOLERANCE_MS) || tries >= 3) return waited;
      }
    },
    async pause(ms) {
      const time = await redis.time();
      const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
      await reserve(key, interval, now + Math.max(0, Math.round(ms)), maxWaitMs);
    },
  };
}
