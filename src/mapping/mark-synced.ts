import { sql } from 'drizzle-orm';
import { fencedWrite } from './fenced-write.ts';
import type { DbOrTx, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

/**
 * The join link read back: state `synced` (terminal), the lease released. `linkEnabledAt` is when
 * edit-class enabled it, kept unless a recovery point already stored it.
 */
export function markSynced(
  db: DbOrTx,
  lease: Lease,
  read: { joinLink: string; remoteName?: string | undefined; linkEnabledAt: Date },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  return fencedWrite(db, lease, {
    name: 'mark_synced',
    set: sql`state = 'synced', join_link = ${read.joinLink}, synced_at = now(), last_error = null, last_error_kind = null,
             remote_name = coalesce(${read.remoteName ?? null}::text, remote_name),
             link_enabled_at = coalesce(link_enabled_at, ${read.linkEnabledAt.toISOString()}::timestamptz)`,
    lease: 'release',
    events,
  });
}
