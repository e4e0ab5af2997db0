import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, execute } from '../sql.ts';
import type { DeliveryView, WebhookStatus } from './types.ts';

export interface DeliveryFilter {
  /** Only messages in these states (default: every state). */
  statuses?: readonly WebhookStatus[];
  batchId?: string;
  instituteId?: string;
  /** The newest this many (default 100). */
  limit?: number;
}

const VIEW = sql.raw(`message_id as "messageId", type, institute_id as "instituteId", batch_id as "batchId", status, attempts,
  occurred_at as "occurredAt", last_attempt_at as "lastAttemptAt", last_status as "lastStatus", last_error as "lastError",
  case when status = 'pending' then next_attempt_at end as "nextAttemptAt", delivered_at as "deliveredAt"`);

/** Messages, newest first, without their data (what `deliveries` and `history` show). */
export async function listDeliveries(db: DbOrTx, filter: DeliveryFilter = {}): Promise<DeliveryView[]> {
  const where: SQL[] = [];
  if (filter.statuses?.length) where.push(sql`status = any(${sql.param([...filter.statuses])}::text[])`);
  if (filter.batchId !== undefined) where.push(sql`batch_id = ${filter.batchId}`);
  if (filter.instituteId !== undefined) where.push(sql`institute_id = ${filter.instituteId}`);
  const clause = where.length ? sql`where ${sql.join(where, sql` and `)}` : sql``;
  const { rows } = await execute<DeliveryView>(db, sql`select ${VIEW} from webhook_messages ${clause} order by id desc limit ${filter.limit ?? 100}`);
  return rows.map(decode);
}

/** A batch's messages, oldest first. */
export async function messagesOfBatch(db: DbOrTx, batchRowId: number): Promise<DeliveryView[]> {
  const { rows } = await execute<DeliveryView>(db, sql`select ${VIEW} from webhook_messages where batch_row_id = ${batchRowId} order by id`);
  return rows.map(decode);
}

const date = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(value as string));

function decode(row: DeliveryView): DeliveryView {
  return {
    ...row,
    occurredAt: new Date(row.occurredAt),
    lastAttemptAt: date(row.lastAttemptAt),
    nextAttemptAt: date(row.nextAttemptAt),
    deliveredAt: date(row.deliveredAt),
  };
}
