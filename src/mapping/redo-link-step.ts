import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import type { Db, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

const REDO_LINK_STEP = fencedStatement('redo_link_step', 'extend', sql`state = 'created', link_enabled_at = null`);

/** The link did not stick on the remote: back to `created`, so edit-class runs again. */
export function redoLinkStep(db: Db, lease: Lease, leaseMs: number, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, REDO_LINK_STEP, { extendMs: leaseMs, events });
}
