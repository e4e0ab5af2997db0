import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import type { Db, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

const MARK_CREATING = fencedStatement('mark_creating', 'extend', sql`state = 'creating', create_sent_at = now(), create_ended_at = null`);

/**
 * `creating`, written *before* the add-class POST leaves: a batch found in this state later may have a
 * class on the remote, so it is settled by reading the listing, never by posting again.
 */
export function markCreating(db: Db, lease: Lease, leaseMs: number, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, MARK_CREATING, { extendMs: leaseMs, events });
}
