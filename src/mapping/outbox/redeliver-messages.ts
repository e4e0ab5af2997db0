import { sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';

/**
 * Puts messages back to be sent now under the same message id, with a fresh retry schedule: the
 * named ones (any state but pending), or every given-up one. Returns the ids put back.
 */
export async function redeliverMessages(db: Db, which: { messageIds: readonly string[] } | { failed: true }): Promise<string[]> {
  const target = 'failed' in which ? sql`status = 'failed'` : sql`message_id = any(${sql.param([...which.messageIds])}::text[]) and status <> 'pending'`;
  const { rows } = await execute<{ messageId: string }>(
    db,
    sql`update webhook_messages set status = 'pending', attempts = 0, next_attempt_at = now(), retry_from = now(), locked_until = null
         where ${target} returning message_id as "messageId"`,
  );
  return rows.map((r) => r.messageId);
}
