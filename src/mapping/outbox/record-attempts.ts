import { sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';
import type { AttemptRecord, ClaimedMessage, WebhookStatus } from './types.ts';

export interface AttemptEntry {
  message: Pick<ClaimedMessage, 'id' | 'attempt'>;
  record: AttemptRecord;
}

/**
 * Records how attempts ended and lets go of their messages, all in one statement (a dispatcher
 * records what finished together: one round trip, not one a message). Each is fenced by its
 * attempt's number: a dispatcher that held a message too long (another claimed it since) changes
 * nothing. A retry is never later than `retryForMs` from the message's start, and one failing at
 * or past that gives it up: "for up to WEBHOOK_RETRY_FOR" means tried until then, the last attempt
 * on the deadline itself whatever the schedule's next wait. Returns each entry's status after it,
 * in order, or undefined where the message was no longer that attempt's.
 */
export async function recordAttempts(db: Db, entries: readonly AttemptEntry[]): Promise<(WebhookStatus | undefined)[]> {
  if (entries.length === 0) return [];
  const column = <T>(of: (entry: AttemptEntry) => T) => sql.param(entries.map(of));
  const deadline = sql`w.retry_from + v.retry_for_ms * interval '1 millisecond'`;
  const { rows } = await execute<{ id: string; status: WebhookStatus }>(
    db,
    sql`update webhook_messages w
           set status = case v.outcome when 'delivered' then 'delivered' when 'skipped' then 'skipped' when 'given_up' then 'failed'
                          else case when now() >= ${deadline} then 'failed' else 'pending' end end,
               delivered_at = case when v.outcome = 'delivered' then now() else w.delivered_at end,
               next_attempt_at = case when v.outcome = 'retry' then least(now() + v.delay_ms * interval '1 millisecond', ${deadline}) else w.next_attempt_at end,
               locked_until = null,
               attempts = case when v.outcome = 'skipped' then w.attempts - 1 else w.attempts end,
               last_status = case when v.outcome = 'skipped' then w.last_status else v.status end,
               last_error = case when v.outcome = 'delivered' then null else v.error end
          from unnest(${column((e) => e.message.id)}::bigint[], ${column((e) => e.message.attempt)}::int[],
                      ${column((e) => e.record.outcome)}::text[], ${column((e) => ('status' in e.record ? e.record.status : null))}::int[],
                      ${column((e) => ('error' in e.record ? e.record.error : null))}::text[],
                      ${column((e) => (e.record.outcome === 'retry' ? e.record.delayMs : null))}::float8[],
                      ${column((e) => (e.record.outcome === 'retry' ? e.record.retryForMs : null))}::float8[])
               as v(id, attempt, outcome, status, error, delay_ms, retry_for_ms)
         where w.id = v.id and w.attempts = v.attempt and w.status = 'pending'
        returning w.id, w.status`,
  );
  const statusOf = new Map(rows.map((r) => [Number(r.id), r.status]));
  return entries.map((e) => statusOf.get(e.message.id));
}
