import { type SQL, sql } from 'drizzle-orm';
import { type Db, execute, interval } from '../sql.ts';
import { dueAndFree, oldestPendingOfBatch } from './due.ts';
import type { ClaimedMessage } from './types.ts';

interface RawClaim {
  id: string;
  messageId: string;
  instituteId: string;
  batchId: string;
  type: string;
  occurredAt: string | Date;
  data: Record<string, unknown>;
  attempt: number;
}

/**
 * Claims up to `limit` messages that are due, of `institutes` only (default every institute: a
 * dispatcher claims only what it can send), holding each for `holdMs` (a dispatcher that dies lets
 * go of them then). Per batch, only its oldest pending message is ever due (./due.ts), so one
 * batch's messages arrive in order. Several dispatchers claim side by side (`skip locked`) and never
 * the same message.
 */
export async function claimDueMessages(db: Db, limit: number, holdMs: number, institutes?: readonly string[]): Promise<ClaimedMessage[]> {
  const { rows } = await execute<RawClaim>(db, claimDueStatement(limit, holdMs, institutes));
  return rows.map((r) => ({ ...r, id: Number(r.id), occurredAt: new Date(r.occurredAt) }));
}

/** The claim's statement: due messages from webhook_messages_due_idx in order, each its batch's oldest pending one. */
export function claimDueStatement(limit: number, holdMs: number, institutes?: readonly string[]): SQL {
  const only = institutes === undefined ? sql`` : sql`and m.institute_id = any(${sql.param([...institutes])}::text[])`;
  return sql`with due as (
          select m.id from webhook_messages m
           where m.status = 'pending' and ${dueAndFree('m')} ${only}
             and m.id = ${oldestPendingOfBatch('m')}
           order by m.next_attempt_at, m.id
           limit ${limit}
           for update of m skip locked)
        update webhook_messages w
           set locked_until = now() + ${interval(holdMs)}, attempts = w.attempts + 1, last_attempt_at = now()
          from due where w.id = due.id
        returning w.id, w.message_id as "messageId", w.institute_id as "instituteId", w.batch_id as "batchId", w.type,
                  w.occurred_at as "occurredAt", w.data, w.attempts as attempt`;
}
