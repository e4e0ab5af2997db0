import { inArray, lt, sql } from 'drizzle-orm';
import { batchEvents } from '../db/schema/index.ts';
import { type Db, interval } from './sql.ts';

/** Deletes audit rows older than the retention, in slices so a large backlog never holds long locks. */
export async function pruneEvents(db: Db, retentionMs: number, slice = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const victims = db
      .select({ id: batchEvents.id })
      .from(batchEvents)
      .where(lt(batchEvents.at, sql`now() - ${interval(retentionMs)}`))
      .limit(slice);
    const deleted = await db.delete(batchEvents).where(inArray(batchEvents.id, victims)).returning({ id: batchEvents.id });
    total += deleted.length;
    if (deleted.length < slice) return total;
  }
}
