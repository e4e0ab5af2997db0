import { sql } from 'drizzle-orm';
import { editStatements, editWrite } from './edit-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

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

const MARK_EDIT_REFUSED = editStatements('mark_edit_refused', REFUSED);

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
  return editWrite(db, lease, leaseMs, MARK_EDIT_REFUSED, refused.atRest, events, values);
}
