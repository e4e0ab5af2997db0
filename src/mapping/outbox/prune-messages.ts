import { type SQL, sql } from 'drizzle-orm';
import { pruneInSlices } from '../prune-in-slices.ts';
import { type Db, interval } from '../sql.ts';

/** Deletes finished messages (delivered, given up, skipped) older than the retention, in slices. */
export async function pruneMessages(db: Db, retentionMs: number, slice = 5_000): Promise<number> {
  return pruneInSlices(db, (limit) => pruneMessagesStatement(retentionMs, limit), slice);
}

/**
 * One slice: the oldest `limit` finished messages past the retention, read from
 * webhook_messages_settled_idx (without it, every pass read every message, pending ones included),
 * then deleted by their ids.
 */
export function pruneMessagesStatement(retentionMs: number, limit: number): SQL {
  return sql`delete from webhook_messages where id = any(array(
    select id from webhook_messages where status <> 'pending' and occurred_at < now() - ${interval(retentionMs)} order by occurred_at limit ${limit}))`;
}
