import { sql } from 'drizzle-orm';
import { type Db, execute, interval } from '../sql.ts';
import { dueAndFree, oldestPendingOfBatch } from './due.ts';
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

/**
 * Records as skipped every due message that no dispatcher can send: neither this one (`own`, the
 * institutes it has an endpoint for) nor any other seen within `freshMs` (webhook_routes, read in this
 * same statement). So a worker without an endpoint for an institute leaves its messages to one that
 * has (a rolling deploy that turns webhooks on loses none), and a fleet where none has one records
 * them skipped, once a poll, in one statement. Returns their types.
 *
 * A batch is decided in order, as it is claimed (./due.ts): its pending messages are skipped only once its
 * oldest pending one is due and not claimed (and then all of them, that one included). A later
 * message is never skipped while an earlier one waits for its retry or is being sent: that one could
 * still be delivered (an endpoint back by then), and the receiver would never hear what came after.
 */
export async function skipUnrouted(db: Db, own: readonly string[], freshMs: number): Promise<string[]> {
  const { rows } = await execute<{ type: string }>(
    db,
    sql`update webhook_messages m set status = 'skipped', last_error = 'no webhook endpoint is configured for institute ' || m.institute_id
         where m.status = 'pending'
           and exists (select 1 from webhook_messages e where e.id = ${oldestPendingOfBatch('m')} and ${dueAndFree('e')})
           and m.institute_id <> all(${sql.param([...own])}::text[])
           and not exists (select 1 from webhook_routes r
                            where r.seen_at > now() - ${interval(freshMs)} and (r.institute_ids is null or m.institute_id = any(r.institute_ids)))
       returning m.type`,
  );
  return rows.map((r) => r.type);
}
