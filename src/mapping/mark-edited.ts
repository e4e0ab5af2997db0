import { sql } from 'drizzle-orm';
import { editStatements, editWrite } from './edit-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease, StoredEvent } from './types.ts';

// The class now carries the run's values (and is not archived). A rename that arrived while the edit
// was in flight stays waiting (the revision moved on), so the next run sends it: the last one wins.
const EDITED = sql`class_name = coalesce(${value('sentName')}::text, b.class_name),
  next_class_name = case when b.revision = ${value('revision')}::int then null else b.next_class_name end,
  remote_name = case when ${value('sentName')}::text is null then b.remote_name else ${value('keptName')}::text end,
  applied_event = ${value('event')}::jsonb, applied_version = ${value('version')}::bigint, applied_revision = ${value('revision')}::int,
  archived_at = null, last_error = null, last_error_kind = null`;

const MARK_EDITED = editStatements('mark_edited', EDITED);

/**
 * An edit-class applied the batch's change to its class: the values sent (`sentName` when it renamed
 * it, `keptName` the name the remote says it kept) as of `revision`, whose integrator version is `version`.
 */
export function markEdited(
  db: Db,
  lease: Lease,
  leaseMs: number,
  edit: { revision: number; event: StoredEvent; version: number | null; sentName: string | undefined; keptName: string | undefined; atRest: boolean },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  const values = {
    revision: edit.revision,
    event: JSON.stringify(edit.event),
    version: edit.version,
    sentName: edit.sentName ?? null,
    keptName: edit.keptName ?? null,
  };
  return editWrite(db, lease, leaseMs, MARK_EDITED, edit.atRest, events, values);
}
