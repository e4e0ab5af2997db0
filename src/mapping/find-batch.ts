import { and, eq } from 'drizzle-orm';
import { batchClasses } from '../db/schema/index.ts';
import type { Db } from './sql.ts';
import type { BatchKey, MappingRow } from './types.ts';

export async function findBatch(db: Db, key: BatchKey): Promise<MappingRow | undefined> {
  const [row] = await db
    .select()
    .from(batchClasses)
    .where(and(eq(batchClasses.instituteId, key.instituteId), eq(batchClasses.batchId, key.batchId)));
  return row;
}
