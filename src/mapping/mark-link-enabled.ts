import { sql } from 'drizzle-orm';
import { fencedWrite } from './fenced-write.ts';
import type { DbOrTx, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

/** edit-class enabled the join link: state `link_enabled`. */
export function markLinkEnabled(db: DbOrTx, lease: Lease, leaseMs: number, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, { name: 'mark_link_enabled', set: sql`state = 'link_enabled', link_enabled_at = now()`, lease: { extendMs: leaseMs }, events });
}
