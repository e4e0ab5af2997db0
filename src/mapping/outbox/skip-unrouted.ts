import { sql } from 'drizzle-orm';
import { type Db, execute, interval } from '../sql.ts';
import { dueAndFree, oldestPendingOfBatch } from './due.ts';

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
