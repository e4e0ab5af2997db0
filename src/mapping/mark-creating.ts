import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease, StoredEvent } from './types.ts';

// The values about to be sent become the class's: a change arriving later moves the revision past them.
// The name sent is the one the run read (a rename recorded as waiting by an earlier version folds in).
const MARK_CREATING = fencedStatement(
  'mark_creating',
  'extend',
  sql`state = 'creating', create_sent_at = now(), create_ended_at = null, class_name = ${value('className')}::text, next_class_name = null,
      applied_revision = ${value('revision')}, applied_event = ${value('event')}::jsonb, applied_version = ${value('version')}::bigint`,
);

/**
 * `creating`, written *before* the add-class POST leaves: a batch found in this state later may have a
 * class on the remote, so it is settled by reading the listing, never by posting again.
 */
export function markCreating(
  db: Db,
  lease: Lease,
  leaseMs: number,
  sending: { revision: number; event: StoredEvent; version: number | null; className: string },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  const values = { revision: sending.revision, event: JSON.stringify(sending.event), version: sending.version, className: sending.className };
  return fencedWrite(db, lease, MARK_CREATING, { extendMs: leaseMs, events, values });
}
