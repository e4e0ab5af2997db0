import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

// A batch reopened while its class was being archived keeps its state and its applied revision: the
// archive changed nothing the batch should carry (so no webhook tells of it), the class is now
// marked as maybe archived, and the reopen's own run unarchives it with the newest values. The
// lease is released either way, which ends this run.
const MARK_CANCELLED = fencedStatement(
  'mark_cancelled',
  'release',
  sql`state = case when b.cancelled_at is not null then 'cancelled'::batch_state else b.state end,
      archived_at = case when ${value('archived')}::boolean then now() else b.archived_at end,
      applied_revision = case when b.cancelled_at is not null then ${value('revision')}::int else b.applied_revision end,
      last_error = case when b.cancelled_at is not null then null else b.last_error end,
      last_error_kind = case when b.cancelled_at is not null then null else b.last_error_kind end`,
);

/**
 * The batch ends `cancelled` as of `revision`: its class archived just now (`archived`), or left as
 * it is (none was made, it is gone from the remote, or CLASSROOM_ARCHIVE_ON_CANCEL=false). The lease
 * is released.
 */
export function markCancelled(db: Db, lease: Lease, end: { revision: number; archived: boolean }, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, MARK_CANCELLED, { events, values: { revision: end.revision, archived: end.archived } });
}
