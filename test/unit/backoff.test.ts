// Backoff: how long a failed sync job waits before its next attempt, and how long the remote asks
// us to wait. Driven by what each is given (the random draw, the clock), never by the time now.
import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/classroom/transport.ts';
import { fullJitterBackoff } from '../../src/sync/backoff.ts';

describe('fullJitterBackoff', () => {
  it('draws from 0 up to a ceiling that doubles with each attempt, capped at the maximum', () => {
    const ceiling = (attempt: number) => fullJitterBackoff(attempt, 1_000, 30_000, () => 0.999_999) + 1;
    expect([1, 2, 3, 4, 5, 6, 7].map(ceiling)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(fullJitterBackoff(3, 1_000, 30_000, () => 0)).toBe(0);
    expect(fullJitterBackoff(3, 1_000, 30_000, () => 0.5)).toBe(2_000);
    // Attempt 0 (never tried) waits as the first does.
    expect(fullJitterBackoff(0, 1_000, 30_000, () => 0.5)).toBe(500);
  });
});

describe("the remote's Retry-After", () => {
  const clock = { now: () => Date.parse('2026-11-25T10:00:00Z') };

  it('reads seconds, or an HTTP date counted from the clock it is given', () => {
    expect(parseRetryAfter('7', clock)).toBe(7_000);
    expect(parseRetryAfter('0.5', clock)).toBe(500);
    expect(parseRetryAfter('Wed, 25 Nov 2026 10:00:30 GMT', clock)).toBe(30_000);
    expect(parseRetryAfter('Wed, 25 Nov 2026 09:00:00 GMT', clock)).toBe(0);
  });

  it('is nothing when absent or unreadable', () => {
    expect(parseRetryAfter(null, clock)).toBeUndefined();
    expect(parseRetryAfter('', clock)).toBeUndefined();
    expect(parseRetryAfter('soon', clock)).toBeUndefined();
  });
});
