import { sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';
import type { ClaimedMessage } from './types.ts';

/**
 * Lets go of claimed messages that were not sent (a dispatcher closing, or one whose claim would run
 * out before an attempt could end): due again at once for any dispatcher, their attempt not counted.
 * Fenced like a record: a message claimed again since is left alone.
 */
export async function releaseClaims(db: Db, messages: readonly Pick<ClaimedMessage, 'id' | 'attempt'>[]): Promise<void> {
  if (messages.length === 0) return;
  await execute(
    db,
    sql`update webhook_messages w set locked_until = null, attempts = w.attempts - 1
          from unnest(${sql.param(messages.map((m) => m.id))}::bigint[], ${sql.param(messages.map((m) => m.attempt))}::int[]) as v(id, attempt)
         where w.id = v.id and w.attempts = v.attempt and w.status = 'pending'`,
  );
}
