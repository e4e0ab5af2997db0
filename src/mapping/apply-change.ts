// A change the integrator made to a recorded batch (an update, a cancellation, a reopening), written
// under the row's lock together with the audit line that explains it. What a change does to a row
// is decided by the caller (src/intake/changes.ts) from the row as locked: this file reads the row,
// hands it over, and writes the answer, so two changes of one batch never interleave.
import { type SQL, and, eq, sql } from 'drizzle-orm';
import { batchClasses, batchEvents } from '../db/schema/index.ts';
import type { Db } from './sql.ts';
import type { BatchEventType, BatchKey, BatchState, EventDetail, MappingRow, StoredEvent } from './types.ts';

/** The columns a change may set. */
export interface ChangeSet {
  event?: StoredEvent;
  className?: string;
  nextClassName?: string | null;
  state?: BatchState;
  /** `now` marks the batch cancelled (keeping an earlier instant); null reopens it. */
  cancelled?: 'now' | null;
  version?: number | null;
  /** The revision moves on: a sync run has something to apply (or, with `settled`, nothing remote to do). */
  bumpRevision?: boolean;
  /** The remote needs nothing for this revision (no class exists, or none will). */
  settled?: boolean;
  /**
   * Ends any runner's lease on the batch, so a run that read the row before this change writes
   * nothing more (used only while no add-class can be in flight: `pending`, or no class wanted).
   */
  fenceRunner?: boolean;
}

export type ChangePlan = { kind: 'apply'; set: ChangeSet; audit: { type: BatchEventType; detail: EventDetail } } | { kind: 'stale'; detail: EventDetail };

export type ChangeResult = { status: 'missing' } | { status: 'applied' | 'stale'; row: MappingRow; before: MappingRow };

/** Locks the batch's row, asks `plan` what the change does to it, and writes that with its audit line. */
export async function applyChange(db: Db, key: BatchKey, plan: (row: MappingRow) => ChangePlan): Promise<ChangeResult> {
  return db.transaction(async (tx) => {
    const where = and(eq(batchClasses.instituteId, key.instituteId), eq(batchClasses.batchId, key.batchId));
    const [before] = await tx.select().from(batchClasses).where(where).for('update');
    if (!before) return { status: 'missing' } as const;
    const decided = plan(before);
    if (decided.kind === 'stale') {
      await tx.insert(batchEvents).values({ batchRowId: before.id, type: 'stale', detail: decided.detail });
      return { status: 'stale', row: before, before } as const;
    }
    const [row] = await tx.update(batchClasses).set(columnsOf(decided.set)).where(eq(batchClasses.id, before.id)).returning();
    if (!row) throw new Error(`batch ${key.batchId} of institute ${key.instituteId} vanished under its own lock`);
    const moved = row.state !== before.state;
    await tx.insert(batchEvents).values({
      batchRowId: row.id,
      type: decided.audit.type,
      fromState: moved ? before.state : null,
      toState: moved ? row.state : null,
      classId: row.classId,
      detail: decided.audit.detail,
    });
    return { status: 'applied', row, before } as const;
  });
}

function columnsOf(set: ChangeSet): Record<string, unknown> {
  const columns: Record<string, unknown | SQL> = { updatedAt: sql`now()` };
  if (set.event !== undefined) columns.event = set.event;
  if (set.className !== undefined) columns.className = set.className;
  if (set.nextClassName !== undefined) columns.nextClassName = set.nextClassName;
  if (set.state !== undefined) columns.state = set.state;
  if (set.cancelled === 'now') columns.cancelledAt = sql`coalesce(${batchClasses.cancelledAt}, now())`;
  if (set.cancelled === null) columns.cancelledAt = null;
  if (set.version !== undefined) columns.version = set.version;
  if (set.bumpRevision) columns.revision = sql`${batchClasses.revision} + 1`;
  if (set.bumpRevision && set.settled) columns.appliedRevision = sql`${batchClasses.revision} + 1`;
  if (set.fenceRunner) {
    columns.leaseEpoch = sql`${batchClasses.leaseEpoch} + 1`;
    columns.leaseOwner = null;
    columns.leaseExpiresAt = null;
  }
  return columns;
}
