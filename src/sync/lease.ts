// One runner per batch at a time. A lease row-lock in Postgres with a fencing epoch: every write a
// run makes names the epoch it was granted, so a run that lost its lease (paused process, stalled
// job re-run elsewhere) can never overwrite the run that replaced it.
import { and, eq, gt, inArray, isNull, lt, notInArray, or, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Db, DbOrTx } from '../db/client.ts';
import { type BatchRow, TERMINAL_STATES, batchClasses } from '../db/schema/index.ts';
import type { BatchKey } from './keys.ts';
import { LeaseLostError } from './errors.ts';

export type BatchChanges = PgUpdateSetSource<typeof batchClasses>;

export interface Lease {
  rowId: number;
  batchId: string;
  epoch: number;
  owner: string;
}

export type AcquireResult =
  | { status: 'acquired'; lease: Lease; row: BatchRow; dbNow: Date }
  | { status: 'terminal'; row: BatchRow }
  | { status: 'busy'; retryInMs: number }
  | { status: 'missing' };

const ms = (value: number) => sql`(${value} * interval '1 millisecond')`;

export async function acquireLease(db: Db, key: BatchKey, owner: string, leaseMs: number, attempt: number): Promise<AcquireResult> {
  const granted = await db
    .update(batchClasses)
    .set({
      leaseOwner: owner,
      leaseEpoch: sql`${batchClasses.leaseEpoch} + 1`,
      leaseExpiresAt: sql`now() + ${ms(leaseMs)}`,
      attempts: attempt,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(batchClasses.instituteId, key.instituteId),
        eq(batchClasses.batchId, key.batchId),
        notInArray(batchClasses.state, [...TERMINAL_STATES]),
        or(isNull(batchClasses.leaseExpiresAt), lt(batchClasses.leaseExpiresAt, sql`now()`)),
      ),
    )
    // The database's clock comes back with the grant (one round trip, not two).
    .returning({ row: batchClasses, dbNow: sql<Date>`now()` });
  const { row, dbNow } = granted[0] ?? {};
  if (row && dbNow) {
    return { status: 'acquired', row, dbNow: new Date(dbNow), lease: { rowId: row.id, batchId: row.batchId, epoch: row.leaseEpoch, owner } };
  }
  const [existing] = await db
    .select({ row: batchClasses, waitMs: sql<number>`greatest(0, extract(epoch from (${batchClasses.leaseExpiresAt} - now())) * 1000)::int` })
    .from(batchClasses)
    .where(and(eq(batchClasses.instituteId, key.instituteId), eq(batchClasses.batchId, key.batchId)));
  if (!existing) return { status: 'missing' };
  if (TERMINAL_STATES.includes(existing.row.state)) return { status: 'terminal', row: existing.row };
  return { status: 'busy', retryInMs: Number(existing.waitMs) + 250 };
}

/**
 * Writes `changes` only while this run still holds the lease, and extends the lease. Called right
 * before every remote call, so a request always starts with a full lease ahead of it.
 */
export async function fencedUpdate(
  db: DbOrTx,
  lease: Lease,
  leaseMs: number,
  changes: BatchChanges = {},
  options: { release?: boolean } = {},
): Promise<BatchRow> {
  const leaseColumns = options.release
    ? { leaseOwner: null, leaseExpiresAt: null }
    : { leaseExpiresAt: sql`now() + ${ms(leaseMs)}` };
  const rows = await db
    .update(batchClasses)
    .set({ ...changes, ...leaseColumns, updatedAt: sql`now()` })
    .where(and(eq(batchClasses.id, lease.rowId), eq(batchClasses.leaseEpoch, lease.epoch), gt(batchClasses.leaseExpiresAt, sql`now()`)))
    .returning();
  const row = rows[0];
  if (!row) throw new LeaseLostError(lease.batchId);
  return row;
}

/** Ends this run's lease; a no-op if another runner has already taken it. */
export async function releaseLease(db: DbOrTx, lease: Lease, changes: BatchChanges = {}): Promise<BatchRow | undefined> {
  const rows = await db
    .update(batchClasses)
    .set({ ...changes, leaseOwner: null, leaseExpiresAt: null, updatedAt: sql`now()` })
    .where(and(eq(batchClasses.id, lease.rowId), eq(batchClasses.leaseEpoch, lease.epoch)))
    .returning();
  return rows[0];
}

export async function classIdsMappedElsewhere(db: Db, rowId: number, classIds: string[]): Promise<Set<string>> {
  if (classIds.length === 0) return new Set();
  const rows = await db
    .select({ classId: batchClasses.classId, id: batchClasses.id })
    .from(batchClasses)
    .where(inArray(batchClasses.classId, classIds));
  return new Set(rows.filter((r) => r.id !== rowId && r.classId).map((r) => r.classId as string));
}
