import { type SQL, sql } from 'drizzle-orm';
import { pruneInSlices } from '../prune-events.ts';
import { type Db, execute, interval } from '../sql.ts';

export interface OutboxStats {
  pending: number;
  /** How long the oldest pending message has waited since its event (0 when none is pending). */
  oldestPendingSeconds: number;
}

/**
 * What the metrics show of the outbox, at any size: the pending count is a sum of
 * webhook_message_counts' deltas (migrations/0013), the oldest the first entry of
 * webhook_messages_pending_age_idx.
 */
export async function outboxStats(db: Db): Promise<OutboxStats> {
  const { rows } = await execute<{ pending: string | null; oldest: number | null }>(
    db,
    sql`select (select sum(n) from webhook_message_counts where status = 'pending') as pending,
               extract(epoch from now() - (select occurred_at from webhook_messages where status = 'pending' order by occurred_at limit 1))::float8 as oldest`,
  );
  const row = rows[0];
  return { pending: Number(row?.pending ?? 0), oldestPendingSeconds: Math.max(0, row?.oldest ?? 0) };
}

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
