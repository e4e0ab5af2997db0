import { type SQL, sql } from 'drizzle-orm';
import { pruneInSlices } from './prune-in-slices.ts';
import { type Db, interval } from './sql.ts';

/** Deletes audit rows older than the retention, in slices so a large backlog never holds long locks. */
export async function pruneEvents(db: Db, retentionMs: number, slice = 5_000): Promise<number> {
  return pruneInSlices(db, (limit) => pruneEventsStatement(retentionMs, limit), slice);
}

/**
 * One slice: the oldest `limit` audit rows past the retention, read from batch_events_at_idx, then
 * deleted by their ids. As `id in (select …)` PostgreSQL hashed the slice and read the whole table
 * to find them (a second a slice at ten million rows).
 */
export function pruneEventsStatement(retentionMs: number, limit: number): SQL {
  return sql`delete from batch_events where id = any(array(
    select id from batch_events where at < now() - ${interval(retentionMs)} order by at limit ${limit}))`;
}
