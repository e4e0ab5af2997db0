import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import type { Db, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

const MARK_LINK_ENABLED = fencedStatement('mark_link_enabled', 'extend', sql`state = 'link_enabled', link_enabled_at = now()`);

/** edit-class enabled the join link: state `link_enabled`. */
export function markLinkEnabled(db: Db, lease: Lease, leaseMs: number, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, MARK_LINK_ENABLED, { extendMs: leaseMs, events });
}
