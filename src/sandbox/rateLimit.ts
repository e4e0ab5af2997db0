// Calls-per-window limit, like the live service's "500 calls per minute per API key".

export interface RateLimiter {
  /** Counts the call and returns true, or returns false (not counted) when the window is full. */
  admit(now: number, limit: number | undefined, windowMs: number): boolean;
  reset(): void;
}

/**
 * Sliding window log: exact, and cheap enough at sandbox volumes (one number per admitted call
 * inside the window). Refused calls are not counted, so a client that waits always gets back in.
 */
export function createRateLimiter(): RateLimiter {
  let times: number[] = [];
  let head = 0;
  return {
    admit(now, limit, windowMs) {
      if (limit === undefined) return true;
      while (head < times.length && (times[head] ?? 0) <= now - windowMs) head++;
      // Compact now and then so the log does not grow without bound.
      if (head > 1024 && head * 2 > times.length) {
        times = times.slice(head);
        head = 0;
      }
      if (times.length - head >= limit) return false;
      times.push(now);
      return true;
    },
    reset() {
      times = [];
      head = 0;
    },
  };
}
