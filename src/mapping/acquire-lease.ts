// A runner's claim on one batch: granted only while no other runner holds an unexpired lease, with
// a new epoch that every later write of the run must name.
import { sql } from 'drizzle-orm';
import { TERMINAL_STATES } from '../db/schema/index.ts';
import { type Db, ROW_B, decodeRow, execute, interval, prepare, runPrepared, stateList, value } from './sql.ts';
import type { BatchKey, BatchState, Lease, MappingRow } from './types.ts';

export type AcquireResult =
  | {
      status: 'acquired';
      lease: Lease;
      row: MappingRow;
      /** The database's clock at the grant: runs time their read-lag windows by it. */
      dbNow: Date;
    }
  | { status: 'terminal'; row: MappingRow }
  | { status: 'busy'; retryInMs: number }
  | { status: 'missing' };

const terminal = stateList(TERMINAL_STATES);

/** The states at rest in which a change may still be due: the batch's class exists (or existed) and is edited or archived. */
export const CHANGEABLE_AT_REST: readonly BatchState[] = ['synced', 'cancelled'];

/** A batch at rest with a change its class does not carry yet (src/intake/changes.ts). */
export const CHANGE_DUE = sql`(b.state in (${stateList(CHANGEABLE_AT_REST)}) and b.revision > b.applied_revision)`;

const ACQUIRE = prepare(
  'acquire_lease',
  sql`
    update batch_classes b
       set lease_owner = ${value('owner')}, lease_epoch = b.lease_epoch + 1, lease_expires_at = now() + ${interval(value('leaseMs'))},
           attempts = ${value('attempt')}, updated_at = now(),
           -- A runner that died holding a creating batch may have sent add-class until its lease
           -- ended (every send checks the lease first), and its client waited at most one request
           -- timeout for the answer.
           create_ended_at = case when b.state = 'creating' and b.lease_expires_at is not null
                                  then greatest(b.create_ended_at, b.lease_expires_at + ${interval(value('inFlightMs'))})
                                  else b.create_ended_at end,
           -- Its edit-class (only a batch with a class is edited) may land one more CLASSROOM_TIMEOUT after that.
           calls_settled_at = case when b.lease_expires_at is not null and b.class_id is not null
                                   then greatest(b.calls_settled_at, b.lease_expires_at + ${interval(value('inFlightMs'))} + ${interval(value('inFlightMs'))})
                                   else b.calls_settled_at end
     where b.institute_id = ${value('instituteId')} and b.batch_id = ${value('batchId')}
       and (b.state not in (${terminal}) or ${CHANGE_DUE})
       and (b.lease_expires_at is null or b.lease_expires_at < now())
    returning ${ROW_B}, now() as "dbNow"`,
);

/** `CHANGE_DUE` of a row read already. */
export function changeDue(row: Pick<MappingRow, 'state' | 'revision' | 'appliedRevision'>): boolean {
  return CHANGEABLE_AT_REST.includes(row.state) && row.revision > row.appliedRevision;
}

/** A run has something to do: a batch not at rest, or one at rest with a change not yet applied. */
export function wantsRun(row: Pick<MappingRow, 'state' | 'revision' | 'appliedRevision'>): boolean {
  return !TERMINAL_STATES.includes(row.state) || changeDue(row);
}

/** `inFlightMs`: the longest a request of a runner that died may have been waiting for its answer (CLASSROOM_TIMEOUT). */
export async function acquireLease(db: Db, key: BatchKey, owner: string, leaseMs: number, attempt: number, inFlightMs: number): Promise<AcquireResult> {
  const [granted] = await runPrepared(db, ACQUIRE, { owner, leaseMs, attempt, inFlightMs, instituteId: key.instituteId, batchId: key.batchId });
  if (granted) {
    const { dbNow, ...raw } = granted;
    const row = decodeRow(raw);
    const lease = { rowId: row.id, batchId: row.batchId, epoch: row.leaseEpoch, owner };
    return { status: 'acquired', row, dbNow: new Date(dbNow as string | Date), lease };
  }
  const [existing] = await execute<MappingRow & { waitMs: number }>(
    db,
    sql`
      select ${ROW_B}, greatest(0, extract(epoch from (b.lease_expires_at - now())) * 1000)::int as "waitMs"
        from batch_classes b where b.institute_id = ${key.instituteId} and b.batch_id = ${key.batchId}`,
  ).then((r) => r.rows);
  if (!existing) return { status: 'missing' };
  const { waitMs, ...raw } = existing;
  const row = decodeRow(raw);
  if (TERMINAL_STATES.includes(row.state) && !changeDue(row)) return { status: 'terminal', row };
  return { status: 'busy', retryInMs: Number(waitMs) + 100 };
}
