// A run's read-lag evidence on a clock the test moves: the database's clock advanced from the lease
// grant, the SYNC_READ_LAG window after a write, and the READ_LAG_PATIENCE windows before a read
// that keeps missing the write is believed. No real time passes.
import { describe, expect, it } from 'vitest';
import { RejectedError } from '../../src/classroom/errors.ts';
import { NotVisibleYetError, SyncError } from '../../src/sync/errors.ts';
import { READ_LAG_PATIENCE, ReadLag } from '../../src/sync/read-lag.ts';
import { settleNotListed } from '../../src/sync/settle.ts';
import { manualClock } from '../helpers/clock.ts';

/** When the run's lease was granted, by the database's clock. */
const STARTED = new Date('2026-11-25T10:00:00Z');
const READ_LAG = 1_000;
const notFound = new RejectedError('getClass failed with HTTP 404', { operation: 'getClass', httpStatus: 404 });

function run() {
  // The run's clock is its own (a process's monotonic time): only how far it moves counts.
  const clock = manualClock(123_456);
  return { clock, lag: new ReadLag(STARTED, READ_LAG, clock) };
}

describe('ReadLag', () => {
  it("advances the database's clock read with the lease by the run's own clock", async () => {
    const { clock, lag } = run();
    expect(lag.now()).toBe(STARTED.getTime());
    await clock.advance(2_500);
    expect(lag.now()).toBe(STARTED.getTime() + 2_500);
    expect(lag.start).toBe(STARTED);
  });

  it('counts down the SYNC_READ_LAG window and the patience from a write', async () => {
    const { clock, lag } = run();
    const wrote = new Date(STARTED.getTime() - 200);
    expect(lag.left(wrote)).toBe(READ_LAG - 200);
    expect(lag.patienceLeft(wrote)).toBe(READ_LAG_PATIENCE * READ_LAG - 200);
    await clock.advance(READ_LAG - 200);
    expect(lag.left(wrote)).toBe(0);
    expect(lag.patienceLeft(wrote)).toBe((READ_LAG_PATIENCE - 1) * READ_LAG);
    expect(lag.left(null)).toBe(0);
  });

  it('a write not visible yet: waited for quietly within SYNC_READ_LAG, as read_lag_exceeded after it, never past the patience', async () => {
    const { clock, lag } = run();
    const wrote = STARTED;
    await clock.advance(300);
    const early = lag.notVisibleYet(wrote, 'class c1');
    expect(early).toBeInstanceOf(NotVisibleYetError);
    expect(early.reason).toBe('read_lag');
    // Longer the longer it has been, and no later than the window's end (plus a little).
    expect(early.delayMs).toBe(300);
    await clock.advance(READ_LAG);
    const late = lag.notVisibleYet(wrote, 'class c1');
    expect(late.reason).toBe('read_lag_exceeded');
    expect(late.message).toMatch(/1300 ms after the write, longer than SYNC_READ_LAG \(1000 ms\)/);
    await clock.advance(READ_LAG_PATIENCE * READ_LAG - READ_LAG - 300 - 10);
    expect(lag.notVisibleYet(wrote, 'class c1').delayMs).toBe(10 + 50);
  });

  it('a 404 for a class it stored means "not visible yet" until the patience has passed, then "the remote no longer knows it"', async () => {
    const { clock, lag } = run();
    const stored = STARTED;
    await clock.advance(READ_LAG_PATIENCE * READ_LAG - 1);
    expect(lag.classGone(notFound, stored, 'c1')).toBeInstanceOf(NotVisibleYetError);
    await clock.advance(1);
    const gone = lag.classGone(notFound, stored, 'c1');
    expect(gone).toBeInstanceOf(SyncError);
    expect(gone).not.toBeInstanceOf(NotVisibleYetError);
    expect(gone).toMatchObject({ kind: 'class_unknown', reason: 'http_404_after_read_lag' });
    // Any other error is returned as it is.
    const refused = new RejectedError('getClass failed with HTTP 403', { operation: 'getClass', httpStatus: 403 });
    expect(lag.classGone(refused, stored, 'c1')).toBe(refused);
  });

  it('a listing that shows nothing after an unknown add-class: "not listed" is believed once the run\'s clock reaches the patience', async () => {
    const { clock, lag } = run();
    const sentAt = STARTED.getTime();
    const endedAt = sentAt + 500;
    const lateMs = 2_000;
    const settle = () => settleNotListed({ readAt: lag.now(), sentAt, endedAt, lateMs, readLagMs: READ_LAG, listed: new Set(), acks: [], measured: undefined });
    const patienceAt = endedAt + lateMs + READ_LAG_PATIENCE * READ_LAG;
    const waits: number[] = [];
    for (let settled = settle(); !settled.believed; settled = settle()) {
      waits.push(settled.retryInMs);
      // Each wait reads the listing again no sooner than 50 ms, and no later than the patience (plus 50 ms).
      expect(settled.retryInMs).toBeGreaterThanOrEqual(50);
      expect(lag.now() + settled.retryInMs).toBeLessThanOrEqual(patienceAt + 50);
      await clock.advance(settled.retryInMs);
    }
    expect(lag.now()).toBeGreaterThanOrEqual(patienceAt);
    expect(settle()).toEqual({ believed: true, evidence: { by: 'patience', sinceSentMs: lag.now() - sentAt } });
    // It polled a handful of times, not once a millisecond.
    expect(waits.length).toBeGreaterThan(1);
    expect(waits.length).toBeLessThan(20);
  });
});
