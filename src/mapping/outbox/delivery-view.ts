import { sql } from 'drizzle-orm';
import type { DeliveryView } from './types.ts';

/** The columns a delivery is shown by (`deliveries`, `history`), without the message's data. */
export const VIEW = sql.raw(`message_id as "messageId", type, institute_id as "instituteId", batch_id as "batchId", status, attempts,
  occurred_at as "occurredAt", last_attempt_at as "lastAttemptAt", last_status as "lastStatus", last_error as "lastError",
  case when status = 'pending' then next_attempt_at end as "nextAttemptAt", delivered_at as "deliveredAt"`);

const date = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(value as string));

export function decode(row: DeliveryView): DeliveryView {
  return {
    ...row,
    occurredAt: new Date(row.occurredAt),
    lastAttemptAt: date(row.lastAttemptAt),
    nextAttemptAt: date(row.nextAttemptAt),
    deliveredAt: date(row.deliveredAt),
  };
}
