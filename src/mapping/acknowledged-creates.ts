import { sql } from 'drizzle-orm';
import { type Db, execute, interval } from './sql.ts';

/** A class an add-class of ours was answered with: sent no earlier than `sentAt`, made by `ackedAt`. */
export interface AcknowledgedCreate {
  classId: string;
  sentAt: Date;
  ackedAt: Date;
}

/** The most acknowledged creates one settle looks at; the newest tell the most about a listing. */
const LIMIT = 500;

/**
 * The institute's classes that our add-class calls made and were answered with within the last
 * `withinMs` (the database's clock), newest first: what a fresh listing must show.
 */
export async function acknowledgedCreates(db: Db, instituteId: string, withinMs: number): Promise<AcknowledgedCreate[]> {
  const result = await execute<{ class_id: string; sent_at: Date | string; acked_at: Date | string }>(
    db,
    sql`
    select class_id, create_sent_at as sent_at, create_acked_at as acked_at from batch_classes
     where institute_id = ${instituteId} and create_acked_at is not null
       and create_acked_at > now() - ${interval(withinMs)}
       and class_id is not null and create_sent_at is not null
     order by create_acked_at desc limit ${LIMIT}`,
  );
  return result.rows.map((r) => ({ classId: r.class_id, sentAt: new Date(r.sent_at), ackedAt: new Date(r.acked_at) }));
}
