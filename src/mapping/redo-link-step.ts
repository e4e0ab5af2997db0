import { sql } from 'drizzle-orm';
import { fencedWrite } from './fenced-write.ts';
import type { DbOrTx, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

/** The link did not stick on the remote: back to `created`, so edit-class runs again. */
export function redoLinkStep(db: DbOrTx, lease: Lease, leaseMs: number, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, { name: 'redo_link_step', set: sql`state = 'created', link_enabled_at = null`, lease: { extendMs: leaseMs }, events });
}
