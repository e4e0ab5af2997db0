import { sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';
import { VIEW, decode } from './delivery-view.ts';
import type { DeliveryView } from './types.ts';

/** A batch's messages, oldest first. */
export async function messagesOfBatch(db: Db, batchRowId: number): Promise<DeliveryView[]> {
  const { rows } = await execute<DeliveryView>(db, sql`select ${VIEW} from webhook_messages where batch_row_id = ${batchRowId} order by id`);
  return rows.map(decode);
}
