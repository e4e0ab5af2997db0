import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

const STORE_CLASS = fencedStatement(
  'store_class',
  'extend',
  sql`class_id = ${value('classId')}, state = 'created', class_created_at = now(), review = null, remote_name = coalesce(${value('remoteName')}::text, remote_name)`,
);

/** The ClassID of a class this batch created or adopted: state `created`. */
export function storeClass(
  db: Db,
  lease: Lease,
  leaseMs: number,
  found: { classId: string; remoteName?: string | undefined },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  return fencedWrite(db, lease, STORE_CLASS, { extendMs: leaseMs, events, values: { classId: found.classId, remoteName: found.remoteName ?? null } });
}
