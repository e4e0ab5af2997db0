// The one statement behind every write a sync run makes: the change, the lease it extends (or
// releases), and the audit rows that explain it, fenced by the run's lease epoch. One round trip,
// no transaction: the CTE is atomic. Each write is compiled once, when its module loads, in two
// forms (with audit rows and without); a run supplies only its values.
import { type SQL, sql } from 'drizzle-orm';
import { type Db, PROGRESS_B, type Prepared, type ProgressRow, decodeRow, eventsJson, insertEvents, interval, prepare, runPrepared, value } from './sql.ts';
import { LeaseLostError } from './errors.ts';
import type { AuditEvent, Lease } from './types.ts';

export interface FencedStatement {
  /** Extends the lease (a run going on) or releases it. */
  readonly lease: 'extend' | 'release';
  readonly audited: Prepared;
  readonly quiet: Prepared;
}

/**
 * A fenced write of `set` (`column = value, …` assignments, with `value(name)` where a run's values
 * go; none for a lease touch). It writes only while the lease is this run's and unexpired, a release
 * too: a run whose lease ran out writes nothing (its batch waits for the next run, which repeats the
 * step harmlessly), whatever a change or an exhaustion wrote meanwhile.
 */
export function fencedStatement(name: string, lease: 'extend' | 'release', set?: SQL): FencedStatement {
  const releasing = lease === 'release';
  const leaseSet = releasing ? sql`lease_owner = null, lease_expires_at = null` : sql`lease_expires_at = now() + ${interval(value('extendMs'))}`;
  const update = sql`update batch_classes b set ${set ? sql`${set}, ` : sql``}${leaseSet}, updated_at = now()
     where b.id = ${value('rowId')} and b.lease_epoch = ${value('epoch')} and b.lease_expires_at > now()
     returning ${PROGRESS_B}`;
  const audit = insertEvents(sql`select "id" as id from updated`, sql`${value('events')}::jsonb`);
  return {
    lease,
    audited: prepare(`${name}:${lease}:audited`, sql`with updated as (${update}), audit as (${audit}) select * from updated`),
    quiet: prepare(`${name}:${lease}:quiet`, update),
  };
}

export interface FencedValues {
  events: readonly AuditEvent[];
  /** How far an extending write moves the lease's end from now. */
  extendMs?: number;
  /** The values of the statement's own `value(name)`s. */
  values?: Record<string, unknown>;
}

/** Runs `statement` for this run's lease. Throws LeaseLostError when another runner has taken over. */
export async function fencedWrite(db: Db, lease: Lease, statement: FencedStatement, write: FencedValues): Promise<ProgressRow> {
  if (statement.lease === 'extend' && write.extendMs === undefined) throw new Error(`${statement.quiet.name}: a write that extends the lease needs extendMs`);
  const audited = write.events.length > 0;
  const values: Record<string, unknown> = { ...write.values, rowId: lease.rowId, epoch: lease.epoch };
  if (statement.lease === 'extend') values.extendMs = write.extendMs;
  if (audited) values.events = eventsJson(write.events);
  const [row] = await runPrepared(db, audited ? statement.audited : statement.quiet, values);
  if (!row) throw new LeaseLostError(lease.batchId);
  return decodeRow(row);
}
