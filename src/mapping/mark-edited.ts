import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease, StoredEvent } from './types.ts';

// The class now carries the run's values (and is not archived). A rename that arrived while the edit
// was in flight stays waiting (the revision moved on), so the next run sends it: the last one wins.
const EDITED = sql`class_name = coalesce(${value('sentName')}::text, b.class_name),
  next_class_name = case when b.revision = ${value('revision')}::int then null else b.next_class_name end,
  remote_name = case when ${value('sentName')}::text is null then b.remote_name else ${value('keptName')}::text end,
  applied_event = ${value('event')}::jsonb, applied_revision = ${value('revision')}::int, archived_at = null,
  last_error = null, last_error_kind = null`;

const MARK_EDITED = { extend: fencedStatement('mark_edited', 'extend', EDITED), release: fencedStatement('mark_edited', 'release', EDITED) };

/**
 * An edit-class applied the batch's change to its class: the values sent (`sentName` when it renamed
 * it, `keptName` the name the remote says it kept) as of `revision`. A synced batch stays synced and its lease is released; a batch still on its
 * way keeps the lease for its next step.
 */
export function markEdited(
  db: Db,
  lease: Lease,
  leaseMs: number,
  edit: { revision: number; event: StoredEvent; sentName: string | undefined; keptName: string | undefined; atRest: boolean },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  const values = { revision: edit.revision, event: JSON.stringify(edit.event), sentName: edit.sentName ?? null, keptName: edit.keptName ?? null };
  return edit.atRest
    ? fencedWrite(db, lease, MARK_EDITED.release, { events, values })
    : fencedWrite(db, lease, MARK_EDITED.extend, { events, values, extendMs: leaseMs });
}
