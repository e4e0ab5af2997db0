// A run's view of the remote's read lag: the database's clock (read once with the lease, then
// advanced by the run's own clock, the monotonic one unless it is given another) and how much of a SYNC_READ_LAG window that started at a write is left.
//
// SYNC_READ_LAG is the lag the operator expects, and within it waiting is silent. A remote may lag
// longer than anyone expected, and the two conclusions a read invites cost far more when wrong than
// waiting does: "404, so the class is gone" writes off a batch whose class exists, and "not listed,
// so nothing was created" makes a second class. So both are drawn only once READ_LAG_PATIENCE
// windows have passed; in between, the batch waits (no attempt used) and each wait is logged as a
// warning that names the setting to raise.
import { isNotFound } from '../classroom/errors.ts';
import { remoteName } from '../classroom/operations.ts';
import { type Clock, clockFrom, monotonicClock } from '../support/clock.ts';
import { DeferError, NotVisibleYetError, SyncError } from './errors.ts';

/** How many SYNC_READ_LAG windows a read must keep missing a write before it is believed. */
export const READ_LAG_PATIENCE = 10;

export class ReadLag {
  /** The database's clock now. */
  readonly now: () => number;

  constructor(
    private readonly startedAt: Date,
    private readonly readLagMs: number,
    clock: Pick<Clock, 'now'> = monotonicClock,
  ) {
    this.now = clockFrom(startedAt, clock);
  }

  /** When the run started, by the database's clock. */
  get start(): Date {
    return this.startedAt;
  }

  /** Ms left of the read-lag window that started at `since`; 0 once it has passed (or never started). */
  left(since: Date | null): number {
    return since ? Math.max(0, since.getTime() + this.readLagMs - this.now()) : 0;
  }

  /** Ms left until a read that misses a write made at `since` is believed (READ_LAG_PATIENCE windows). */
  patienceLeft(since: Date | null): number {
    return since ? Math.max(0, since.getTime() + READ_LAG_PATIENCE * this.readLagMs - this.now()) : 0;
  }

  /**
   * Not visible yet: wait (no attempt used), longer the longer it has been and at least until the
   * account's read schedule (`scheduleMs` after the write), never past the patience.
   * Past SYNC_READ_LAG the reason is `read_lag_exceeded`, which is logged as a warning.
   */
  notVisibleYet(since: Date, what: string, scheduleMs = 0): NotVisibleYetError {
    const waited = this.now() - since.getTime();
    // Read again no sooner than the write's age again (a doubling), nor than the account's schedule.
    const next = Math.max(100, waited, scheduleMs - waited);
    if (this.left(since) > 0) {
      const delay = Math.min(this.left(since) + 50, next);
      return new NotVisibleYetError(
        delay,
        `${what} is not visible on the remote yet (${Math.round(waited)} ms after the write; SYNC_READ_LAG ${this.readLagMs} ms); reading again`,
      );
    }
    const delay = Math.min(this.patienceLeft(since) + 50, next);
    return new NotVisibleYetError(delay, `${what} ${this.lagging(waited)}`, 'read_lag_exceeded');
  }

  /**
   * After an add-class of unknown outcome (sent at `sentAt`), the listing shows no class that could
   * be ours, and nothing shows yet that it would (src/sync/settle.ts): read it again in `delayMs`.
   */
  listingLag(sentAt: Date, delayMs: number): DeferError {
    if (this.left(sentAt) > 0) {
      const why = 'no class of this name is listed yet, and nothing shows yet that the listing would show it; reading it again';
      return new DeferError(delayMs, why, 'not_visible_yet', 'listing_lag');
    }
    const waited = this.now() - sentAt.getTime();
    return new DeferError(
      delayMs,
      `no class of this name is listed: the class an add-class of unknown outcome may have made ${this.lagging(waited)}`,
      'not_visible_yet',
      'read_lag_exceeded',
    );
  }

  /** The end of a message about a write the remote has not shown for longer than SYNC_READ_LAG. */
  lagging(waited: number): string {
    return (
      `is still not visible on the remote ${Math.round(waited)} ms after the write, longer than SYNC_READ_LAG (${this.readLagMs} ms); ` +
      `waiting up to ${READ_LAG_PATIENCE} × SYNC_READ_LAG before believing it (raise SYNC_READ_LAG if the remote always lags this much)`
    );
  }

  /**
   * A 404 for a class we created or adopted (stored at `storedAt`): within READ_LAG_PATIENCE windows
   * of storing it, "not visible yet" (wait, no attempt); after that, the remote no longer knows it,
   * and only an operator can say why (the message names the call the 404 answered, from the error).
   * Any other error is returned as it is.
   */
  classGone(error: unknown, storedAt: Date | null, classId: string, scheduleMs = 0): unknown {
    if (!isNotFound(error)) return error;
    if (storedAt && this.patienceLeft(storedAt) > 0) return this.notVisibleYet(storedAt, `class ${classId}`, scheduleMs);
    const window = READ_LAG_PATIENCE * this.readLagMs;
    const message = `the remote no longer knows class ${classId}: ${remoteName(error.operation)} still answered 404 ${READ_LAG_PATIENCE} × SYNC_READ_LAG (${window} ms) after it was stored; reconciliation reports it as missing_remote`;
    return new SyncError('class_unknown', 'http_404_after_read_lag', message, { cause: error });
  }
}
