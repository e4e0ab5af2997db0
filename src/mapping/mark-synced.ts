import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

const MARK_SYNCED = fencedStatement(
  'mark_synced',
  'release',
  sql`state = 'synced', join_link = ${value('joinLink')}, synced_at = now(), last_error = null, last_error_kind = null,
      remote_name = coalesce(${value('remoteName')}::text, remote_name),
      link_enabled_at = coalesce(link_enabled_at, ${value('linkEnabledAt')}::timestamptz)`,
);

/**
 * The join link read back: state `synced` (terminal), the lease released. `linkEnabledAt` is when
 * edit-class enabled it, kept unless a recovery point already stored it.
 */
export function markSynced(
  db: Db,
  lease: Lease,
  read: { joinLink: string; remoteName?: string | undefined; linkEnabledAt: Date },
  events: readonly AuditEvent[],
): Promise<ProgressRow> {
  const values = { joinLink: read.joinLink, remoteName: read.remoteName ?? null, linkEnabledAt: read.linkEnabledAt.toISOString() };
  return fencedWrite(db, lease, MARK_SYNCED, { events, values });
}
