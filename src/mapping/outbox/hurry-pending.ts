import { sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';

/**
 * Makes pending messages due now (the named ones, or every one), keeping their attempts and retry
 * window: after an endpoint comes back, its backlog need not wait out the schedule. A batch's later
 * message still waits for its earlier one. Returns the ids made due.
 */
export async function hurryPending(db: Db, which: { messageIds: readonly string[] } | { all: true }): Promise<string[]> {
  const target = 'all' in which ? sql`true` : sql`message_id = any(${sql.param([...which.messageIds])}::text[])`;
  const { rows } = await execute<{ messageId: string }>(
    db,
    sql`update webhook_messages set next_attempt_at = least(next_attempt_at, now())
         where status = 'pending' and ${target} returning message_id as "messageId"`,
  );
  return rows.map((r) => r.messageId);
}
