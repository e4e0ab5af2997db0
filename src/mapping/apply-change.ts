// A change the integrator made to a recorded batch (an update, a cancellation, a reopening), written
// with the audit line that explains it. What a change does to a row is decided by the caller
// (src/intake/changes.ts) from the row as read: the write then applies only if the row is still
// exactly that row (its `xmin`, the version PostgreSQL gives each row version), else the row is read
// and decided again. One statement per try and no transaction: nothing is held between the two, so
// a connection lost mid-way is never kept out of the pool.
import { type SQL, sql } from 'drizzle-orm';
import { type Db, ROW_B, decodeRow, eventsJson, execute, insertEvents } from './sql.ts';
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
  /** The revision moves on: a sync run has something to apply (or, with `noRemoteWork`, nothing remote to do). */
  bumpRevision?: boolean;
  /** The remote needs nothing for this revision (no class exists, or none will): it counts as applied at once. */
  noRemoteWork?: boolean;
  /**
   * The class may have been archived (an archive whose answer was lost counts): the next edit sends
   * `archived: false`. Used when a batch cancelled with a class is reopened.
   */
  mayBeArchived?: boolean;
  /**
   * Ends any runner's lease on the batch, so a run that read the row before this change writes
   * nothing more (used only while no add-class can be in flight: `pending`, or no class wanted).
   */
  fenceRunner?: boolean;
}

export type ChangePlan =
  | { kind: 'apply'; set: ChangeSet; audit: { type: Exclude<BatchEventType, 'remote_call'>; detail: EventDetail } }
  | { kind: 'stale'; detail: EventDetail };

export type ChangeResult = { status: 'missing' } | { status: 'applied' | 'stale'; row: MappingRow };

/** How often a change is decided again because a sync run wrote the row in between (each try takes milliseconds). */
const TRIES = 50;

/** Reads the batch's row, asks `plan` what the change does to it, and writes that with its audit line. */
export async function applyChange(db: Db, key: BatchKey, plan: (row: MappingRow) => ChangePlan): Promise<ChangeResult> {
  for (let tries = 0; tries < TRIES; tries += 1) {
    const [read] = (
      await execute<Record<string, unknown>>(
        db,
        sql`select ${ROW_B}, b.xmin::text as "rowVersion" from batch_classes b where b.institute_id = ${key.instituteId} and b.batch_id = ${key.batchId}`,
      )
    ).rows;
    if (!read) return { status: 'missing' };
    const { rowVersion, ...raw } = read;
    const before = decodeRow(raw);
    const decided = plan(before);
    const audit =
      decided.kind === 'stale'
        ? { type: 'stale' as const, detail: decided.detail }
        : { ...decided.audit, classId: before.classId, ...movedBy(before, decided.set) };
    const events = sql`${eventsJson([audit])}::jsonb`;
    if (decided.kind === 'stale') {
      await execute(db, insertEvents(sql`select ${before.id}::bigint as id`, events));
      return { status: 'stale', row: before };
    }
    const [written] = (
      await execute<Record<string, unknown>>(
        db,
        sql`with updated as (
              update batch_classes b set ${setOf(decided.set)} where b.id = ${before.id} and b.xmin = ${rowVersion}::text::xid returning ${ROW_B}
            ), audit as (${insertEvents(sql`select "id" as id from updated`, events)})
            select * from updated`,
      )
    ).rows;
    if (written) return { status: 'applied', row: decodeRow(written) };
  }
  throw new Error(`batch ${key.batchId} of institute ${key.instituteId} kept changing while a change was applied to it; nothing was recorded: send it again`);
}

function movedBy(before: MappingRow, set: ChangeSet): { fromState?: BatchState; toState?: BatchState } {
  return set.state && set.state !== before.state ? { fromState: before.state, toState: set.state } : {};
}

function setOf(set: ChangeSet): SQL {
  const parts: SQL[] = [sql`updated_at = now()`];
  if (set.event !== undefined) parts.push(sql`event = ${JSON.stringify(set.event)}::jsonb`);
  if (set.className !== undefined) parts.push(sql`class_name = ${set.className}`);
  if (set.nextClassName !== undefined) parts.push(sql`next_class_name = ${set.nextClassName}`);
  if (set.state !== undefined) parts.push(sql`state = ${set.state}::batch_state`);
  if (set.cancelled === 'now') parts.push(sql`cancelled_at = coalesce(b.cancelled_at, now())`);
  if (set.cancelled === null) parts.push(sql`cancelled_at = null`);
  if (set.version !== undefined) parts.push(sql`version = ${set.version}::bigint`);
  if (set.bumpRevision) parts.push(sql`revision = b.revision + 1`);
  if (set.bumpRevision && set.noRemoteWork) parts.push(sql`applied_revision = b.revision + 1`);
  if (set.mayBeArchived) parts.push(sql`archived_at = coalesce(b.archived_at, now())`);
  if (set.fenceRunner) parts.push(sql`lease_epoch = b.lease_epoch + 1, lease_owner = null, lease_expires_at = null`);
  return sql.join(parts, sql`, `);
}
