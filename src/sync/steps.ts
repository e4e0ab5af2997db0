// One run of the state machine over one batch: a step per state, each one remote call between its
// writes. The writes are the mapping module's named operations (src/mapping); this file decides
// which one follows which answer.
import type { CallOptions } from '../classroom/client.ts';
import { isClassroomError } from '../classroom/errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { AuditEvent, BatchState, Lease, MappingRow, ProgressRow } from '../mapping/index.ts';
import * as mapping from '../mapping/index.ts';
import { DeferError, PermanentSyncError, SyncError } from './errors.ts';
import { Journal } from './journal.ts';
import { type ReadTiming, readDone } from './read-schedule.ts';
import { queueLaneOf } from './lanes.ts';
import type { LeaseKeeper } from './lease-keeper.ts';
import { ReadLag } from './read-lag.ts';
import type { SyncDeps } from './types.ts';
import { type SharedListing, listingFor } from './institute-listing.ts';
import { decideOnListing, listingFailure } from './shared-settle.ts';
import { changeStepOf } from './change-steps.ts';
import { addClassInput } from './class-values.ts';
import type { StepRun } from './run-handle.ts';
import { enableLink, readLink } from './link-steps.ts';

export class BatchRun implements StepRun {
  readonly log: Logger;
  readonly journal: Journal;
  readonly lag: ReadLag;
  /** The revision whose values (`event`) this run holds; a newer one is read before they are sent. */
  private eventRevision: number;
  /** From this run's add-class answer until a call fails: the first read finding the class is a lag sample. */
  private measuringSinceAck = false;
  /** What this run learned and has not stored yet; its next write (or its release) stores it. */
  readonly unstored: mapping.Unstored = {};
  /** The job's last attempt: a failure is recorded as final (src/sync/run-end.ts). */
  readonly lastAttempt: boolean;

  constructor(
    readonly deps: SyncDeps,
    readonly lease: Lease,
    readonly keeper: LeaseKeeper,
    private row: MappingRow,
    startedAt: Date,
    job: { attempt: number; lastAttempt: boolean },
    /** A rate-limit slot the job reserved before the run (the lower lanes'): the first call uses it. */
    private firstSlot?: Promise<number> | undefined,
  ) {
    this.log = deps.logger;
    this.lastAttempt = job.lastAttempt;
    this.journal = new Journal({ attempt: job.attempt, workerId: deps.workerId });
    this.lag = new ReadLag(startedAt, deps.settings.readLagMs, deps.clock);
    this.eventRevision = row.revision;
  }

  get current(): MappingRow {
    return this.row;
  }

  /** Set by a write that released the lease: the run ends there, whatever state it left. */
  private released = false;

  /**
   * This run is done: its write released the lease (a change that arrived meanwhile, or a reopen that
   * kept the batch short of rest, is the next run's: src/sync/machine.ts), or the batch is in a
   * terminal state with no change due.
   */
  get atRest(): boolean {
    return this.released || (mapping.TERMINAL_STATES.includes(this.row.state) && !mapping.changeDue(this.row));
  }

  /** Runs the step of the current state (nothing once the batch is at rest); a change of the batch goes first. */
  async step(): Promise<void> {
    const change = changeStepOf(this.row);
    if (change) return change(this);
    switch (this.row.state) {
      // A `pending` row that may have a class (written so by an earlier version) is settled, never sent again.
      case 'pending':
        return mapping.mayHaveClass(this.row) ? this.resolveCreate() : this.create();
      case 'creating':
        return this.resolveCreate();
      case 'created':
        return enableLink(this);
      case 'link_enabled':
        return readLink(this);
    }
  }

  /**
   * The batch's newest values, read again when a change arrived since this run read them (an update
   * while an add-class was in doubt, for instance): what is sent next must be the newest.
   */
  async refresh(): Promise<MappingRow> {
    if (this.row.revision === this.eventRevision) return this.row;
    const fresh = await mapping.findBatch(this.deps.db, this.row);
    if (!fresh) throw new SyncError('internal', 'missing_row', `batch ${this.row.batchId} vanished while a run held its lease`);
    // The values the class was last given too: the add-class of this very run may have set them.
    const { event, appliedEvent, version, className, revision, appliedRevision, nextClassName, cancelledAt, archivedAt } = fresh;
    this.row = { ...this.row, event, appliedEvent, version, className, revision, appliedRevision, nextClassName, cancelledAt, archivedAt };
    this.eventRevision = revision;
    return this.row;
  }

  private async create(): Promise<void> {
    const { event, revision, version, className, nextClassName } = await this.refresh();
    const { leaseMs } = this.deps.settings;
    // Add-class is the one call that cannot be repeated harmlessly: right before it leaves, always a
    // fenced write of the intent, whatever the clock says (a frozen process may have lost its lease).
    const sending = { revision, event, version, className: nextClassName ?? className };
    const markCreating = () =>
      this.write('creating', (events) => mapping.markCreating(this.deps.db, this.lease, leaseMs, sending, events)).then(() => this.keeper.assertOwned());
    let classId: string;
    try {
      const input = addClassInput(event, sending.className, this.row.instituteId);
      ({ classId } = await this.deps.classroom.addClass(input, this.callOptions(markCreating)));
    } catch (error) {
      // Only a failure that proves nothing was created may forget that a POST was attempted.
      if (isClassroomError(error) && error.kind !== 'outcome_unknown' && this.row.state === 'creating') {
        await this.write('pending', (events) => mapping.forgetCreate(this.deps.db, this.lease, leaseMs, events));
        // Nothing was made, and a cancel recorded meanwhile wants none: the batch ends `cancelled` next.
        if (this.row.cancelledAt) return;
      }
      throw error;
    }
    await this.storeClassId(classId, 'created');
    this.measuringSinceAck = true;
  }

  private async storeClassId(classId: string, how: 'created' | 'adopted', remoteName?: string): Promise<void> {
    const detail = how === 'adopted' ? { resolution: 'adopt' } : undefined;
    try {
      await this.write('created', (events) => mapping.storeClass(this.deps.db, this.lease, this.deps.settings.leaseMs, { classId, remoteName, how }, events), {
        classId,
        detail,
      });
    } catch (error) {
      // Losing the lease must not lose a class we know exists: claim it if nobody stored one yet.
      if (error instanceof mapping.LeaseLostError && !(await mapping.claimCreatedClass(this.deps.db, this.lease.rowId, classId, this.deps.workerId))) {
        this.log.error(
          { classId },
          'created a class after losing the lease, and the batch already has another or was abandoned: reconciliation will report it as orphan_remote',
        );
      }
      throw error;
    }
    this.log.info({ classId, how }, `class ${how}`);
  }

  private async resolveCreate(): Promise<void> {
    const { settleMs, leaseMs } = this.deps.settings;
    const row = this.row;
    const waitMs = (row.createSentAt?.getTime() ?? 0) + settleMs - this.lag.start.getTime();
    if (waitMs > 0) {
      throw new DeferError(waitMs + 50, `add-class outcome unknown; reading the listing after a ${settleMs} ms settle delay`, 'busy', 'settle_delay');
    }
    // Only a listing read since then can show the class (src/sync/institute-listing.ts: one listing settles many).
    const notBefore = row.createSentAt ? row.createSentAt.getTime() + settleMs : this.lag.start.getTime();
    let shared: SharedListing;
    try {
      shared = await listingFor(this, notBefore);
    } catch (error) {
      throw listingFailure(this.lag, row, error);
    }
    // "Not listed" is believed only on evidence that the listing would show the class (settle.ts).
    const { resolution, settled } = await decideOnListing(this.deps, row, shared);
    if (settled && !settled.believed)
      throw this.lag.listingLag(row.createSentAt ?? new Date(shared.readAt), shared.retryInMs(settled.retryInMs, this.lag.now()));
    const settledBy = settled?.believed ? settled.evidence : undefined;
    this.log.info({ decision: resolution.decision, settledBy: settledBy?.by }, 'resolved an add-class of unknown outcome by reading the listing');
    if (resolution.decision === 'adopt') return this.storeClassId(resolution.classId, 'adopted', resolution.remoteName);
    if (resolution.decision === 'create') {
      const detail = { resolution: 'create', settledBy };
      await this.write('pending', (events) => mapping.forgetCreate(this.deps.db, this.lease, leaseMs, events), { detail });
      return;
    }
    const review = { reason: resolution.reason, evidence: resolution.evidence };
    const detail = { resolution: 'review', matches: resolution.evidence.matches.map((m) => m._id) };
    await this.write('needs_review', (events) => mapping.markNeedsReview(this.deps.db, this.lease, review, events), { error: review.reason, detail });
    throw new PermanentSyncError('ambiguous_create', 'needs_review', `needs_review: ${resolution.reason}`);
  }

  requireClassId(): string {
    if (!this.row.classId) {
      throw new SyncError('internal', 'missing_class_id', `batch ${this.row.batchId} is ${this.row.state} without a ClassID; the mapping is inconsistent`);
    }
    return this.row.classId;
  }

  /**
   * Every call checks, right before it leaves, that the lease is still this run's by the local clock
   * (add-class after writing `creating`); the heartbeat's signal stops it if the lease is lost.
   */
  callOptions(beforeSend: () => Promise<void> = async () => this.keeper.assertOwned()): CallOptions {
    const slotReady = this.firstSlot;
    this.firstSlot = undefined;
    // Live batches' first call reserves in the live lane; every later call of a batch (and of a lower
    // lane's batch, whose first slot was reserved before the run) is a batch under way.
    const lane = queueLaneOf(this.row.lane, this.row.state) === 'live' ? 'live' : 'under_way';
    return {
      beforeSend,
      ...(slotReady ? { slotReady } : {}),
      lane,
      signal: this.keeper.signal,
      observe: (call) => this.journal.record(call, this.row.classId),
    };
  }

  readDone(timing: ReadTiming | undefined, visible: boolean): Promise<number> {
    const measuring = this.measuringSinceAck;
    this.measuringSinceAck &&= !visible;
    return readDone(this, timing, visible, measuring);
  }

  stopMeasuring(): number {
    this.measuringSinceAck = false;
    return 0;
  }

  /** Runs a write that leads to `to`, with the journal's calls and the transition; logs and reports it. */
  async write(
    to: BatchState,
    operation: (events: AuditEvent[]) => Promise<ProgressRow | undefined>,
    facts: { classId?: string; error?: string; detail?: Record<string, unknown> | undefined } = {},
  ): Promise<void> {
    const from = this.row.state;
    const events = this.journal.take(from, to, { classId: facts.classId ?? this.row.classId, error: facts.error ?? null, detail: facts.detail });
    const sentAt = this.keeper.now();
    const progress = await this.keeper.whileWriting(() => operation(events));
    if (!progress) return;
    this.moveTo({ ...this.row, ...progress });
    if (progress.leaseExpiresAt !== null) return this.keeper.renewed(sentAt);
    this.released = true;
    this.keeper.released();
  }

  /** The run's view of its batch moves on; a change of state is logged and reported. */
  moveTo(row: MappingRow): void {
    const from = this.row.state;
    this.row = row;
    if (row.state !== from) this.announce(from, row);
  }

  /**
   * Logs and reports a change of state this run wrote. The lease grant changes none (a batch is
   * `creating` only once the write made just before its add-class is sent has landed).
   */
  private announce(from: BatchState, row: MappingRow): void {
    this.log.info({ from, to: row.state, classId: row.classId, attempt: row.attempts }, `batch ${from} → ${row.state}`);
    this.deps.onTransition?.({ key: row, from, to: row.state, row });
  }
}
