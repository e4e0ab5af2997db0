// Failed sign-ins per source address: after MAX_FAILURES in a window, every authenticated route
// answers that address 429 until the window passes. Successes never count, so a client with a good
// token is never slowed by its own traffic, and a guesser gets 20 tries a minute, not thousands.
//
// Counted in Redis (rate-limiter-flexible), so a fleet of workers behind one load balancer shares
// one count per address; if Redis is unreachable each process counts in memory instead (the
// insurance limiter), which keeps the throttle without making sign-in depend on Redis.
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from '../redis/connection.ts';

export const MAX_FAILURES = 20;
export const FAILURE_WINDOW_SECONDS = 60;

export interface AuthThrottle {
  /** Seconds until this address may try again, or undefined if it may now. */
  retryAfter(address: string): Promise<number | undefined>;
  /** Counts one failed authentication from this address. */
  failed(address: string): Promise<void>;
}

export function createAuthThrottle(redis: Redis, prefix: string): AuthThrottle {
  const options = { points: MAX_FAILURES, duration: FAILURE_WINDOW_SECONDS };
  const limiter = new RateLimiterRedis({
    ...options,
    storeClient: redis,
    keyPrefix: `${prefix}:auth-failures`,
    rejectIfRedisNotReady: true,
    insuranceLimiter: new RateLimiterMemory(options),
  });
  return {
    async retryAfter(address) {
      const seen = await limiter.get(address).catch(() => null);
      if (!seen || seen.consumedPoints < MAX_FAILURES) return undefined;
      return Math.max(1, Math.ceil(seen.msBeforeNext / 1000));
    },
    async failed(address) {
      // Over the limit, consume rejects with the same count: nothing to do with it.
      await limiter.consume(address).catch((rejected: RateLimiterRes | Error) => rejected);
    },
  };
}
