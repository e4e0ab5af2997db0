import { type SQL, sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';
import { VIEW, decode } from './delivery-view.ts';
import type { DeliveryView, WebhookStatus } from './types.ts';

export interface DeliveryFilter {
  /** Only messages in these states (default: every state). */
  statuses?: readonly WebhookStatus[];
  batchId?: string;
  instituteId?: string;
  /** The newest this many (default 100). */
  limit?: number;
}

/** Messages, newest first, without their data (what `deliveries` and `history` show). */
export async function listDeliveries(db: Db, filter: DeliveryFilter = {}): Promise<DeliveryView[]> {
  const where: SQL[] = [];
  if (filter.statuses?.length) where.push(sql`status = any(${sql.param([...filter.statuses])}::text[])`);
  if (filter.batchId !== undefined) where.push(sql`batch_id = ${filter.batchId}`);
  if (filter.instituteId !== undefined) where.push(sql`institute_id = ${filter.instituteId}`);
  const clause = where.length ? sql`where ${sql.join(where, sql` and `)}` : sql``;
  const { rows } = await execute<DeliveryView>(db, sql`select ${VIEW} from webhook_messages ${clause} order by id desc limit ${filter.limit ?? 100}`);
  return rows.map(decode);
}
