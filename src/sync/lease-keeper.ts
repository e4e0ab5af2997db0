// A run's lease, kept alive while the run is: a heartbeat renews it every third of SYNC_LEASE, so
// a process that dies (SIGKILL, OOM, a lost node) lets its batches go within SYNC_LEASE of its last
// renewal, however long a remote call takes. A process that was frozen (SIGSTOP, a long GC pause, a
// VM stall) and wakes after its lease ran out must not act as the owner: its writes are fenced by
// the epoch (src/mapping), every remote call checks the lease's local deadline right before it
// leaves (`assertOwned`), and the first renewal that fails stops the run at once (`signal` aborts
// the call in flight). All of it is timed by the clock it is given (the monotonic one by default).
import type { Logger } from '../logging/logger.ts';
import { LeaseLostError } from '../mapping/index.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';
import { failureOf } from './errors.ts';

export interface LeaseKeeperOptions {
  leaseMs: number;
  batchId: string;
  /** Renews the lease (a fenced write that extends it); throws when it cannot. */
  renew: () => Promise<unknown>;
  logger: Logger;
  /** When the statement that granted the lease was sent, by `clock`. */
  grantedAt: number;
  /** What the deadline and the heartbeat are timed by (default: the monotonic clock). */
  clock?: Clock;
}

/**
 * How much earlier than the database's expiry the local deadline falls: a check passed just before
 * it still leaves time for the request to reach the socket.
 */
const guardOf = (leaseMs: number) => Math.min(250, leaseMs / 10);

export class LeaseKeeper {
  private deadline: number;
  /** When the last renewal that worked (or the grant, or a write of the run) was sent. */
  private renewedAt: number;
  private readonly controller = new AbortController();
  private readonly clock: Clock;
  /** Cancels the next beat. */
  private cancelBeat: (() => void) | undefined;
  private lostWith: Error | undefined;
  private stopped = false;
  /** Writes of the run in flight: they renew (or release) the lease themselves, so no beat starts meanwhile. */
  private writing = 0;

  constructor(private readonly options: LeaseKeeperOptions) {
    this.clock = options.clock ?? monotonicClock;
    this.deadline = options.grantedAt + options.leaseMs - guardOf(options.leaseMs);
    this.renewedAt = options.grantedAt;
    this.schedule();
  }

  /** Aborted when the lease is lost (or cannot be renewed): calls in flight stop at once. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the run must stop, once a renewal failed; undefined while the lease holds. */
  get lost(): Error | undefined {
    return this.lostWith;
  }

  /** The keeper's clock: a write of the run reads its send time here, for `renewed`. */
  now(): number {
    return this.clock.now();
  }

  /** A write sent at `sentAt` (by the keeper's clock, `now()`) extended the lease by SYNC_LEASE. */
  renewed(sentAt: number): void {
    this.renewedAt = Math.max(this.renewedAt, sentAt);
    this.deadline = Math.max(this.deadline, sentAt + this.options.leaseMs - guardOf(this.options.leaseMs));
  }

  /**
   * Runs a write of the run; no renewal starts meanwhile, and one that fails beside it is the write's
   * business (a renewal that reached PostgreSQL after a write that released the lease, synced or
   * needs_review, fails, and must not stop a run that has finished). The write does not wait for a
   * renewal in flight: add-class's intent is written between its rate-limit slot and its send.
   */
  async whileWriting<T>(write: () => Promise<T>): Promise<T> {
    this.writing += 1;
    try {
      return await write();
    } finally {
      this.writing -= 1;
    }
  }

  /** Throws unless this run still owns the lease by its own clock: call it right before a request leaves. */
  assertOwned(): void {
    if (this.lostWith) throw this.lostWith;
    if (this.clock.now() >= this.deadline) this.lose(new LeaseLostError(this.options.batchId));
    if (this.lostWith) throw this.lostWith;
  }

  /**
   * A write of the run released the lease: the run is over, and nothing more may be sent or
   * written under it (a reopen may have left the batch short of rest: its own job runs it).
   */
  released(): void {
    this.lose(new LeaseLostError(this.options.batchId));
  }

  /** The run is over: no more renewals. */
  stop(): void {
    this.stopped = true;
    this.cancelBeat?.();
  }

  /** The next beat: a third of SYNC_LEASE after the last renewal (a write of the run counts as one). */
  private schedule(): void {
    if (this.stopped) return;
    this.beatIn(this.renewedAt + this.options.leaseMs / 3 - this.clock.now());
  }

  private beatIn(ms: number): void {
    this.cancelBeat = this.clock.after(Math.max(0, ms), () => void this.beat());
  }

  private async beat(): Promise<void> {
    if (this.stopped || this.lostWith) return;
    const sentAt = this.clock.now();
    // A process that was frozen past its deadline wakes here first: it stops, whatever the renewal says.
    if (sentAt >= this.deadline) return this.lose(new LeaseLostError(this.options.batchId));
    // A write of the run renewed it meanwhile, or is renewing it now: no statement needed yet.
    if (sentAt < this.renewedAt + this.options.leaseMs / 3) return this.schedule();
    if (this.writing > 0) return this.beatIn(Math.max(10, this.options.leaseMs / 30));
    try {
      await this.options.renew();
      this.renewed(sentAt);
    } catch (error) {
      if (this.stopped) return;
      // A write of the run is in flight, or ran since this renewal was sent: it renewed or released
      // the lease itself, and its own outcome says whether the run still owns the batch.
      if (this.writing > 0 || this.renewedAt > sentAt) return this.schedule();
      // Classified, not the raw error: a failed statement's message lists its parameters.
      const { kind, reason, message } = failureOf(error);
      this.options.logger.warn(
        { failure: { kind, reason, message } },
        'could not renew the lease: stopping this run; the batch runs again once the lease is free',
      );
      return this.lose(error instanceof Error ? error : new Error(String(error)));
    }
    this.schedule();
  }

  private lose(error: Error): void {
    if (this.lostWith) return;
    this.lostWith = error;
    this.stop();
    this.controller.abort(error);
  }
}
