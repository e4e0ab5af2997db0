// A run's view of the remote's read lag: the database's clock (read once with the lease, then
// advanced locally) and how much of a SYNC_READ_LAG window that started at a write is left.
import { isNotFound } from '../classroom/errors.ts';
import { NotVisibleYetError, SyncError } from './errors.ts';

export class ReadLag {
  private readonly localStart = performance.now();

  constructor(
    private readonly startedAt: Date,
    private readonly readLagMs: number,
  ) {}

  /** The database's clock now. */
  now(): number {
    return this.startedAt.getTime() + (performance.now() - this.localStart);
  }

  /** When the run started, by the database's clock. */
  get start(): Date {
    return this.startedAt;
  }

  /** Ms left of the read-lag window that started at `since`; 0 once it has passed (or never started). */
  left(since: Date | null): number {
    return since ? Math.max(0, since.getTime() + this.readLagMs - this.now()) : 0;
  }

  /** Not visible yet: wait (no attempt used), longer the longer it has been, never past the window. */
  notVisibleYet(since: Date, what: string): NotVisibleYetError {
    const waited = this.now() - since.getTime();
    const delay = Math.min(this.left(since) + 50, Math.max(100, waited));
    return new NotVisibleYetError(
      delay,
      `${what} is not visible on the remote yet (${Math.round(waited)} ms after the write; SYNC_READ_LAG ${this.readLagMs} ms); reading again`,
    );
  }

  /**
   * A 404 for a class we created or adopted (stored at `storedAt`): within SYNC_READ_LAG of storing
   * it, "not visible yet" (wait, no attempt); after that, the remote no longer knows it, and only an
   * operator can say why. Any other error is returned as it is.
   */
  classGone(error: unknown, storedAt: Date | null, classId: string, operation: string): unknown {
    if (!isNotFound(error)) return error;
    if (storedAt && this.left(storedAt) > 0) return this.notVisibleYet(storedAt, `class ${classId}`);
    const message = `the remote no longer knows class ${classId}: ${operation} answered 404 more than SYNC_READ_LAG (${this.readLagMs} ms) after it was stored; reconciliation reports it as missing_remote`;
    return new SyncError('class_unknown', 'http_404_after_read_lag', message, { cause: error });
  }
}
