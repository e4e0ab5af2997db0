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

/** Of `messageIds`, those the outbox knows (to name the unknown ones). */
export async function knownMessageIds(db: Db, messageIds: readonly string[]): Promise<Set<string>> {
  const { rows } = await execute<{ messageId: string }>(
    db,
    sql`select message_id as "messageId" from webhook_messages where message_id = any(${sql.param([...messageIds])}::text[])`,
  );
  return new Set(rows.map((r) => r.messageId));
}

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
