// Calls-per-window limit, like the live service's "500 calls per minute per API key". One per key.

export interface RateLimiter {
  /** Counts the call and returns true, or returns false (not counted) when the window is full. */
  admit(now: number, limit: number | undefined, windowMs: number): boolean;
  /** The most calls admitted inside any one window so far (what a test compares with the limit). */
  peak(): number;
  reset(): void;
}

/**
 * Sliding window log: exact, and cheap enough at sandbox volumes (one number per admitted call
 * inside the window). Refused calls are not counted, so a client that waits always gets back in.
 * Calls are logged with no limit set too, so the peak is known either way.
 */
export function createRateLimiter(): RateLimiter {
  let times: number[] = [];
  let head = 0;
  let peak = 0;
  return {
    admit(now, limit, windowMs) {
      while (head < times.length && (times[head] ?? 0) <= now - windowMs) head++;
      // Compact now and then so the log does not grow without bound.
      if (head > 1024 && head * 2 > times.length) {
        times = times.slice(head);
        head = 0;
      }
      if (limit !== undefined && times.length - head >= limit) return false;
      times.push(now);
      peak = Math.max(peak, times.length - head);
      return true;
    },
    peak: () => peak,
    reset() {
      times = [];
      head = 0;
      peak = 0;
    },
  };
}
