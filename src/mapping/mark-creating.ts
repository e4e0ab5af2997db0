import { sql } from 'drizzle-orm';
import { fencedWrite } from './fenced-write.ts';
import type { DbOrTx, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

/**
 * `creating`, written *before* the add-class POST leaves: a batch found in this state later may have a
 * class on the remote, so it is settled by reading the listing, never by posting again.
 */
export function markCreating(db: DbOrTx, lease: Lease, leaseMs: number, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, { name: 'mark_creating', set: sql`state = 'creating', create_sent_at = now()`, lease: { extendMs: leaseMs }, events });
}
