import { sql } from 'drizzle-orm';
import { type FencedStatement, fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease, StoredEvent } from './types.ts';

// The class now carries the run's values (and is not archived). A rename that arrived while the edit
// was in flight stays waiting (the revision moved on), so the next run sends it: the last one wins.
const EDITED = sql`class_name = coalesce(${value('sentName')}::text, b.class_name),
  next_class_name = case when b.revision = ${value('revision')}::int then null else b.next_class_name end,
  remote_name = case when ${value('sentName')}::text is null then b.remote_name else ${value('keptName')}::text end,
  applied_event = ${value('event')}::jsonb, applied_version = ${value('version')}::bigint, applied_revision = ${value('revision')}::int,
  archived_at = null, last_error = null, last_error_kind = null`;

// The remote refused the edit: the change is done with all the same, with the refusal kept for
// operators, so the batch does not send it again and again. What it asked for still stands: the next
// change sends it again with its own (a waiting name stays waiting, and the subject and extra fields
// are always sent), so a later update can fix what was refused. What the class carries was read back
// (an earlier edit whose answer was lost may have landed): its name and subject are stored as the
// class's, when read; a waiting name the class already carries waits no more.
const REFUSED = sql`next_class_name = case when ${value('className')}::text is not null and b.revision = ${value('revision')}::int then null
    else b.next_class_name end,
  class_name = coalesce(${value('className')}::text, b.class_name), remote_name = coalesce(${value('remoteName')}::text, b.remote_name),
  applied_event = case when ${value('subject')}::text is null then b.applied_event
    else jsonb_set(coalesce(b.applied_event, b.event), '{subject}', to_jsonb(${value('subject')}::text)) end,
  applied_revision = ${value('revision')}::int, last_error = ${value('error')}::text, last_error_kind = 'rejected'`;

const either = (name: string, set: ReturnType<typeof sql>) => ({
  extend: fencedStatement(name, 'extend', set),
  release: fencedStatement(name, 'release', set),
});
const MARK_EDITED = either('mark_edited', EDITED);
const MARK_EDIT_REFUSED = either('mark_edit_refused', REFUSED);

/** A batch at rest (synced) releases its lease with the write; one still on its way keeps it for its next step. */
function write(
  db: Db,
  lease: Lease,
  leaseMs: number,
  statements: { extend: FencedStatement; release: FencedStatement },
  atRest: boolean,
  events: readonly AuditEvent[],
  values: Record<string, unknown>,
) {
  return atRest
    ? fencedWrite(db, lease, statements.release, { events, values })
    : fencedWrite(db, lease, statements.extend, { events, values, extendMs: leaseMs });
}

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
  return write(db, lease, leaseMs, MARK_EDITED, edit.atRest, events, values);
}

/** What a class was read to carry after a refused edit: its name (as we sent it, and as the remote kept it) and subject, where known. */
export interface Carried {
  className: string | undefined;
  remoteName: string | undefined;
  subject: string | undefined;
}

/** The remote refused the edit-class of the change as of `revision` (`error` says why); the class carries `carried`. */
export function markEditRefused(
  db: Db,
  lease: Lease,
  leaseMs: number,
  refused: { revision: number; error: string; atRest: boolean; carried: Carried },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  const { className, remoteName, subject } = refused.carried;
  const values = { revision: refused.revision, error: refused.error, className: className ?? null, remoteName: remoteName ?? null, subject: subject ?? null };
  return write(db, lease, leaseMs, MARK_EDIT_REFUSED, refused.atRest, events, values);
}
