import { sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';

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
