// The one statement behind every write a sync run makes: the change, the lease it extends (or
// releases), and the audit rows that explain it, fenced by the run's lease epoch. One round trip,
// no transaction: the CTE is atomic.
import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, PROGRESS_B, type ProgressRow, decodeRow, insertEvents, interval, prepared } from './sql.ts';
import { type AuditEvent, type Lease, LeaseLostError } from './types.ts';

export interface FencedWrite {
  /** Names the statement (with `lease` and whether there are events): one text per name. */
  name: string;
  /** `column = value, …` assignments; empty for a lease touch. */
  set?: SQL;
  /** Extends the lease by this much (a run going on), or releases it (`release`). */
  lease: { extendMs: number } | 'release';
  events: readonly AuditEvent[];
}

/**
 * Writes only while `lease` is this run's and unexpired (a release needs only the epoch: a run
 * may always give up what it holds). Throws LeaseLostError when another runner has taken over.
 */
export async function fencedWrite(db: DbOrTx, lease: Lease, write: FencedWrite): Promise<ProgressRow> {
  const releasing = write.lease === 'release';
  const leaseSet =
    write.lease === 'release' ? sql`lease_owner = null, lease_expires_at = null` : sql`lease_expires_at = now() + ${interval(write.lease.extendMs)}`;
  const fence = releasing ? sql`` : sql` and b.lease_expires_at > now()`;
  const update = sql`update batch_classes b set ${write.set ? sql`${write.set}, ` : sql``}${leaseSet}, updated_at = now()
     where b.id = ${lease.rowId} and b.lease_epoch = ${lease.epoch}${fence}
     returning ${PROGRESS_B}`;
  const statement =
    write.events.length === 0
      ? update
      : sql`with updated as (${update}), audit as (${insertEvents(sql`select "id" as id from updated`, write.events)}) select * from updated`;
  const name = `${write.name}:${releasing ? 'release' : 'extend'}:${write.events.length === 0 ? 'quiet' : 'audited'}`;
  const [row] = await prepared(db, name, statement);
  if (!row) throw new LeaseLostError(lease.batchId);
  return decodeRow(row);
}
