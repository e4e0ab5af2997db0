import { sql } from 'drizzle-orm';
import { type Db, execute, interval } from '../sql.ts';
import type { AttemptRecord, ClaimedMessage, WebhookStatus } from './types.ts';

/**
 * Records how an attempt ended and lets go of the message. Fenced by the attempt's number: a
 * dispatcher that held it too long (another claimed it since) changes nothing. A retry is never
 * later than `retryForMs` from the message's start; one failing at or past that gives it up.
 * Returns the message's status after it, or undefined when the message was no longer this attempt's.
 */
export async function recordAttempt(db: Db, message: Pick<ClaimedMessage, 'id' | 'attempt'>, record: AttemptRecord): Promise<WebhookStatus | undefined> {
  const fence = sql`where id = ${message.id} and attempts = ${message.attempt} and status = 'pending' returning status`;
  let statement: ReturnType<typeof sql>;
  switch (record.outcome) {
    case 'delivered':
      statement = sql`update webhook_messages set status = 'delivered', delivered_at = now(), locked_until = null,
        last_status = ${record.status}, last_error = null ${fence}`;
      break;
    case 'retry': {
      // The last attempt lands on the deadline itself, whatever the schedule's next wait: "for up
      // to WEBHOOK_RETRY_FOR" means tried until then, not given up a wait early.
      const deadline = sql`retry_from + ${interval(record.retryForMs)}`;
      statement = sql`update webhook_messages
        set status = case when now() >= ${deadline} then 'failed' else 'pending' end,
            next_attempt_at = least(now() + ${interval(record.delayMs)}, ${deadline}), locked_until = null,
            last_status = ${record.status}, last_error = ${record.error} ${fence}`;
      break;
    }
    case 'given_up':
      statement = sql`update webhook_messages set status = 'failed', locked_until = null,
        last_status = ${record.status}, last_error = ${record.error} ${fence}`;
      break;
    case 'skipped':
      statement = sql`update webhook_messages set status = 'skipped', locked_until = null, attempts = attempts - 1,
        last_error = ${record.error} ${fence}`;
      break;
  }
  const { rows } = await execute<{ status: WebhookStatus }>(db, statement);
  return rows[0]?.status;
}

/**
 * Records every due message of an institute outside `routedInstitutes` as skipped, in one statement
 * (a deployment without webhooks pays one statement a poll, not two per message). Returns their types.
 */
export async function skipUnrouted(db: Db, routedInstitutes: readonly string[]): Promise<string[]> {
  const { rows } = await execute<{ type: string }>(
    db,
    sql`update webhook_messages set status = 'skipped', last_error = 'no webhook endpoint is configured for institute ' || institute_id
         where status = 'pending' and next_attempt_at <= now() and (locked_until is null or locked_until < now())
           and institute_id <> all(${sql.param([...routedInstitutes])}::text[])
       returning type`,
  );
  return rows.map((r) => r.type);
}
