import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

const STORED = sql`class_id = ${value('classId')}, state = 'created', class_created_at = now(), review = null, remote_name = coalesce(${value('remoteName')}::text, remote_name)`;

// A class our add-class was answered with is also a fact about the remote's clock: it was made after
// that add-class was sent (create_sent_at) and before now (create_acked_at). Settling another batch's
// unknown outcome leans on that (src/sync/settle.ts); an adopted class carries no such fact.
const STORE_CLASS = {
  created: fencedStatement('store_class_created', 'extend', sql`${STORED}, create_acked_at = now(), create_ended_at = now()`),
  adopted: fencedStatement('store_class_adopted', 'extend', STORED),
};

/** The ClassID of a class this batch created (add-class answered with it) or adopted (found in the listing): state `created`. */
export function storeClass(
  db: Db,
  lease: Lease,
  leaseMs: number,
  found: { classId: string; remoteName?: string | undefined; how: 'created' | 'adopted' },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  return fencedWrite(db, lease, STORE_CLASS[found.how], {
    extendMs: leaseMs,
    events,
    values: { classId: found.classId, remoteName: found.remoteName ?? null },
  });
}
