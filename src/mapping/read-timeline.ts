import { asc, eq } from 'drizzle-orm';
import { batchEvents } from '../db/schema/index.ts';
import { findBatch } from './find-batch.ts';
import type { Db } from './sql.ts';
import type { BatchKey, TimelineEntry } from './types.ts';

/** A batch's audit trail, oldest first; undefined when the batch is unknown. */
export async function readTimeline(db: Db, key: BatchKey, limit = 1_000): Promise<TimelineEntry[] | undefined> {
  const row = await findBatch(db, key);
  if (!row) return undefined;
  const events = await db.select().from(batchEvents).where(eq(batchEvents.batchRowId, row.id)).orderBy(asc(batchEvents.id)).limit(limit);
  return events.map(({ batchRowId: _omit, ...rest }) => rest);
}
