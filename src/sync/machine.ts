// The per-batch state machine. Each remote call is followed by a recovery point committed to
// Postgres, so a later run resumes after the last finished step and never repeats it:
//
//   pending ─add-class─▶ creating ─(ClassID stored)─▶ created ─edit-class─▶ link_enabled ─get-class─▶ synced
//                          │ outcome unknown: resolved by reading the listing (adopt | create | needs_review)
//
// `creating` is written *before* the POST leaves: finding it later means "a class may exist".
import { sql } from 'drizzle-orm';
import { type PendingEvent, appendEvents, remoteCallEvent } from '../audit/events.ts';
import type { CallOptions, ClassroomClient } from '../classroom/client.ts';
import { isClassroomError } from '../classroom/errors.ts';
import type { Db } from '../db/client.ts';
import type { BatchRow, BatchState } from '../db/schema/index.ts';
import type { Logger } from '../logger.ts';
import type { RateLimiter } from '../ratelimit/limiter.ts';
import { DeferError, LeaseLostError, PermanentSyncError } from './errors.ts';
import type { BatchKey } from './keys.ts';
import { type BatchChanges, type Lease, acquireLease, classIdsMappedElsewhere, fencedUpdate, releaseLease } from './lease.ts';
import { resolveUnknownCreate } from './resolve.ts';
import { claimCreatedClass } from './claim.ts';

export interface SyncSettings {
  leaseMs: number;
  settleMs: number;
  /** Pause for the whole fleet after a 429 that carried no Retry-After. */
  throttlePauseMs: number;
}

export interface Transition {
  key: BatchKey;
  from: BatchState;
  to: BatchState;
  row: BatchRow;
}

export interface SyncDeps {
  db: Db;
  classroom: ClassroomClient;
  limiter?: RateLimiter | undefined;
  logger: Logger;
  workerId: string;
  settings: SyncSettings;
  onTransition?: ((transition: Transition) => void) | undefined;
}

export interface SyncOutcome {
  state: BatchState;
  classId: string | null;
  /** False when the batch was already terminal and nothing was sent. */
  worked: boolean;
}

export async function runBatch(deps: SyncDeps, key: BatchKey, attempt: number): Promise<SyncOutcome> {
  const acquired = await acquireLease(deps.db, key, deps.workerId, deps.settings.leaseMs, attempt);
  switch (acquired.status) {
    case 'missing':
      throw new PermanentSyncError(`batch ${key.batchId} of institute ${key.instituteId} is not recorded; publish it again`);
    case 'terminal':
      return { state: acquired.row.state, classId: acquired.row.classId, worked: false };
    case 'busy':
      throw new DeferError(acquired.retryInMs, `batch ${key.batchId} is being synced by another runner`);
  }
  const run = new BatchRun(deps, acquired.lease, acquired.row, acquired.dbNow);
  try {
    const row = await run.toCompletion();
    return { state: row.state, classId: row.classId, worked: true };
  } catch (error) {
    throw await run.fail(error);
  }
}

class BatchRun {
  private readonly log: Logger;
  /** Remote calls made since the last write; they are stored with the state change they led to. */
  private journal: PendingEvent[] = [];

  constructor(
    private readonly deps: SyncDeps,
    private readonly lease: Lease,
    private row: BatchRow,
    private readonly startedAt: Date,
  ) {
    this.log = deps.logger.child({ batchId: row.batchId, instituteId: row.instituteId });
  }

  async toCompletion(): Promise<BatchRow> {
    for (;;) {
      switch (this.row.state) {
        case 'pending':
          await this.create();
          break;
        case 'creating':
          await this.resolveCreate();
          break;
        case 'created':
          await this.enableLink();
          break;
        case 'link_enabled':
          await this.readLink();
          break;
        default:
          return this.row;
      }
    }
  }

  private async create(): Promise<void> {
    const { classroom } = this.deps;
    const event = this.row.event as { subject: string; extra?: Record<string, unknown> };
    let classId: string;
    try {
      ({ classId } = await classroom.addClass(
        { name: this.row.className, subject: event.subject, instituteId: this.row.instituteId, extra: event.extra ?? {} },
        this.callOptions(() => this.write({ state: 'creating', createSentAt: sql`now()` })),
      ));
    } catch (error) {
      // Only a failure that proves nothing was created may forget that a POST was attempted.
      if (isClassroomError(error) && error.kind !== 'outcome_unknown' && this.row.state === 'creating') {
        await this.write({ state: 'pending', createSentAt: null });
      }
      throw error;
    }
    await this.storeClassId(classId, 'created');
  }

  private async storeClassId(classId: string, how: 'created' | 'adopted'): Promise<void> {
    try {
      await this.write({ classId, state: 'created', classCreatedAt: sql`now()`, review: null }, false, how === 'adopted' ? { resolution: 'adopt' } : undefined);
    } catch (error) {
      // Losing the lease must not lose a class we know exists: claim it if nobody stored one yet.
      if (error instanceof LeaseLostError) await claimCreatedClass(this.deps.db, this.lease.rowId, classId, this.log);
      throw error;
    }
    this.log.info({ classId, how }, `class ${how}`);
  }

  private async resolveCreate(): Promise<void> {
    const { settleMs } = this.deps.settings;
    const sentAt = this.row.createSentAt?.getTime() ?? 0;
    const waitMs = sentAt + settleMs - this.startedAt.getTime();
    if (waitMs > 0) throw new DeferError(waitMs + 50, `add-class outcome unknown; reading the listing after a ${settleMs} ms settle delay`);
    await this.write({});
    const resolution = await resolveUnknownCreate(
      this.deps.classroom,
      {
        instituteId: this.row.instituteId,
        className: this.row.className,
        mappedElsewhere: (ids) => classIdsMappedElsewhere(this.deps.db, this.row.id, ids),
      },
      this.callOptions(),
    );
    this.log.info({ decision: resolution.decision }, 'resolved an add-class of unknown outcome by reading the listing');
    if (resolution.decision === 'adopt') return this.storeClassId(resolution.classId, 'adopted');
    if (resolution.decision === 'create') {
      await this.write({ state: 'pending', createSentAt: null }, false, { resolution: 'create' });
      return;
    }
    await this.write(
      { state: 'needs_review', review: { reason: resolution.reason, evidence: resolution.evidence }, lastError: resolution.reason, lastErrorKind: 'ambiguous_create' },
      true,
      { resolution: 'review', matches: resolution.evidence.matches.map((m) => m._id) },
    );
    throw new PermanentSyncError(`needs_review: ${resolution.reason}`);
  }

  private async enableLink(): Promise<void> {
    const classId = this.row.classId!;
    await this.deps.classroom.enableJoinLink(classId, this.callOptions(() => this.write({})));
    await this.write({ state: 'link_enabled', linkEnabledAt: sql`now()` });
  }

  private async readLink(): Promise<void> {
    const classId = this.row.classId!;
    await this.write({});
    const record = await this.deps.classroom.getClass(classId, this.callOptions());
    if (record._id !== classId) {
      throw new Error(`get-class for ${classId} answered with class ${record._id}; will read again`);
    }
    if (!record.joinMagicLink) {
      // The edit did not stick (or was undone on the remote): enable it again on the next attempt.
      await this.write({ state: 'created', linkEnabledAt: null });
      throw new Error(`class ${classId} has no join link after enabling it; will enable it again`);
    }
    await this.write({ state: 'synced', joinLink: record.joinMagicLink, syncedAt: sql`now()`, lastError: null, lastErrorKind: null }, true);
  }

  private callOptions(beforeSend?: () => Promise<void>): CallOptions {
    return {
      ...(beforeSend ? { beforeSend } : {}),
      observe: (call) => {
        this.journal.push(remoteCallEvent(call, { attempt: this.row.attempts, workerId: this.deps.workerId, classId: this.row.classId }));
      },
    };
  }

  /** The journal plus, when the state changed, the transition itself. Clears the journal. */
  private takeEvents(from: BatchState, row: BatchRow, detail?: Record<string, unknown>): PendingEvent[] {
    const events = this.journal;
    this.journal = [];
    if (row.state === from) return events;
    return [
      ...events,
      {
        type: 'transition',
        fromState: from,
        toState: row.state,
        classId: row.classId,
        attempt: row.attempts,
        workerId: this.deps.workerId,
        error: row.state === 'failed' || row.state === 'needs_review' ? row.lastError : null,
        detail: detail ?? null,
      },
    ];
  }

  /**
   * A fenced write that also extends the lease, stored in one transaction with the audit events it
   * explains; logs the transition when the state changes.
   */
  private async write(changes: BatchChanges, release = false, detail?: Record<string, unknown>): Promise<void> {
    const from = this.row.state;
    const { leaseMs } = this.deps.settings;
    // Nothing to record (no call since the last write, no state change: the lease touch before a
    // call): the fenced UPDATE alone is atomic, and BEGIN/COMMIT would be two more round trips.
    const recordsNothing = this.journal.length === 0 && changes.state === undefined;
    this.row = recordsNothing
      ? await fencedUpdate(this.deps.db, this.lease, leaseMs, changes, { release })
      : await this.deps.db.transaction(async (tx) => {
          const row = await fencedUpdate(tx, this.lease, leaseMs, changes, { release });
          await appendEvents(tx, row.id, this.takeEvents(from, row, detail));
          return row;
        });
    if (this.row.state !== from) {
      this.log.info({ from, to: this.row.state, classId: this.row.classId, attempt: this.row.attempts }, `batch ${from} → ${this.row.state}`);
      this.deps.onTransition?.({ key: this.row, from, to: this.row.state, row: this.row });
    }
  }

  /** Records why this run stopped and releases the lease; returns the error the queue should see. */
  async fail(error: unknown): Promise<unknown> {
    if (error instanceof DeferError || error instanceof LeaseLostError || error instanceof PermanentSyncError) {
      await this.release({});
      return error;
    }
    const message = error instanceof Error ? error.message : String(error);
    const kind = isClassroomError(error) ? error.kind : 'internal';
    if (isClassroomError(error) && error.kind === 'throttled') {
      const pauseMs = (error as { retryAfterMs?: number }).retryAfterMs ?? this.deps.settings.throttlePauseMs;
      await this.deps.limiter?.pause(pauseMs);
      await this.release({ lastError: message, lastErrorKind: kind });
      return new DeferError(pauseMs, `remote throttled ${error.operation}; the fleet pauses ${pauseMs} ms`);
    }
    if (isClassroomError(error) && error.kind === 'rejected') {
      const from = this.row.state; // release() moves this.row on to `failed`
      // A refusal need not say what was refused (an unknown institute is "instituteId: not an
      // institute..."): the stored reason names the institute or class the call was about.
      const [what, id] = error.operation === 'addClass' || error.operation === 'listClasses' ? ['institute', this.row.instituteId] : ['class', this.row.classId];
      const reason = id && !message.includes(id) ? `${message} (${what} ${id})` : message;
      await this.release({ state: 'failed', failedAt: sql`now()`, lastError: reason, lastErrorKind: kind });
      this.log.warn({ err: error, from, to: 'failed', classId: this.row.classId }, `batch failed: ${reason}`);
      return new PermanentSyncError(reason, { cause: error });
    }
    this.log.warn({ err: error, state: this.row.state }, `attempt failed, will retry: ${message}`);
    await this.release({ lastError: message, lastErrorKind: kind });
    return error;
  }

  private async release(changes: BatchChanges): Promise<void> {
    try {
      const from = this.row.state;
      const row = await this.deps.db.transaction(async (tx) => {
        const released = await releaseLease(tx, this.lease, changes);
        if (released) await appendEvents(tx, released.id, this.takeEvents(from, released));
        return released;
      });
      if (row && row.state !== this.row.state) {
        this.deps.onTransition?.({ key: row, from: this.row.state, to: row.state, row });
      }
      if (row) this.row = row;
    } catch (error) {
      // The lease will simply expire; the original error matters more to the caller.
      this.log.error({ err: error }, 'could not release the lease; it will expire on its own');
    }
  }
}
