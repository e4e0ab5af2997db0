/**
 * Capped exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff and
 * Jitter"): spreads retries of a fleet that failed together instead of retrying in lockstep.
 */
export function fullJitterBackoff(attemptsMade: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attemptsMade - 1));
  return Math.floor(random() * ceiling);
}
