import { sql } from 'drizzle-orm';
import { type Db, execute, interval } from '../sql.ts';

/**
 * Says, for the fleet, that dispatcher `dispatcherId` runs and can send the messages of
 * `instituteIds` (undefined: of every institute): its row of webhook_routes, seen now. In the same
 * statement, forgets the rows of other dispatchers not seen for `forgetAfterMs` (a worker killed
 * without closing); rows unseen for less are ignored by `skipUnrouted` anyway.
 */
export async function announceRoutes(db: Db, dispatcherId: string, instituteIds: readonly string[] | undefined, forgetAfterMs: number): Promise<void> {
  const ids = instituteIds === undefined ? sql`null` : sql`${sql.param([...instituteIds])}::text[]`;
  await execute(
    db,
    sql`with forgotten as (delete from webhook_routes where seen_at < now() - ${interval(forgetAfterMs)} and dispatcher_id <> ${dispatcherId})
        insert into webhook_routes (dispatcher_id, institute_ids, seen_at) values (${dispatcherId}, ${ids}, now())
        on conflict (dispatcher_id) do update set institute_ids = excluded.institute_ids, seen_at = excluded.seen_at`,
  );
}
