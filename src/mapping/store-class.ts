import { sql } from 'drizzle-orm';
import { fencedWrite } from './fenced-write.ts';
import type { DbOrTx, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

/** The ClassID of a class this batch created or adopted: state `created`. */
export function storeClass(
  db: DbOrTx,
  lease: Lease,
  leaseMs: number,
  found: { classId: string; remoteName?: string | undefined },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  return fencedWrite(db, lease, {
    name: 'store_class',
    set: sql`class_id = ${found.classId}, state = 'created', class_created_at = now(), review = null, remote_name = coalesce(${found.remoteName ?? null}::text, remote_name)`,
    lease: { extendMs: leaseMs },
    events,
  });
}
