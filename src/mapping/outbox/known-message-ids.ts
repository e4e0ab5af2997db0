import { sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';

/** Of `messageIds`, those the outbox knows (to name the unknown ones). */
export async function knownMessageIds(db: Db, messageIds: readonly string[]): Promise<Set<string>> {
  const { rows } = await execute<{ messageId: string }>(
    db,
    sql`select message_id as "messageId" from webhook_messages where message_id = any(${sql.param([...messageIds])}::text[])`,
  );
  return new Set(rows.map((r) => r.messageId));
}
