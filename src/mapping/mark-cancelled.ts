import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

// A batch reopened while its class was being archived keeps its state: the revision moved on, so a
// run unarchives the class again.
const MARK_CANCELLED = fencedStatement(
  'mark_cancelled',
  'release',
  sql`state = case when b.cancelled_at is not null then 'cancelled'::batch_state else b.state end,
      archived_at = case when ${value('archived')}::boolean then now() else b.archived_at end,
      applied_revision = ${value('revision')}::int, last_error = null, last_error_kind = null`,
);

/**
 * The batch ends `cancelled` as of `revision`: its class archived just now (`archived`), or left as
 * it is (none was made, or CLASSROOM_ARCHIVE_ON_CANCEL=false). The lease is released.
 */
export function markCancelled(db: Db, lease: Lease, end: { revision: number; archived: boolean }, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, MARK_CANCELLED, { events, values: { revision: end.revision, archived: end.archived } });
}
