import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import type { Db, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

// A rename that waited beside the sent name becomes the name the next add-class sends. (A batch
// cancelled meanwhile goes back to `pending` too: its run then ends it `cancelled`, releasing the lease.)
const FORGET_CREATE = fencedStatement(
  'forget_create',
  'extend',
  sql`state = 'pending', create_sent_at = null, create_ended_at = null, class_name = coalesce(b.next_class_name, b.class_name), next_class_name = null`,
);

/**
 * Back to `pending`: the add-class is known not to have made a class (it failed before the remote
 * acted, or the listing showed none once the read-lag window had passed), so it may be sent again.
 */
export function forgetCreate(db: Db, lease: Lease, leaseMs: number, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, FORGET_CREATE, { extendMs: leaseMs, events });
}
