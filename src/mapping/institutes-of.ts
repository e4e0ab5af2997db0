import { eq } from 'drizzle-orm';
import { batchClasses } from '../db/schema/index.ts';
import type { Db } from './sql.ts';

/** Institutes under which a batch id is known (a batch id is unique only within its institute). */
export async function institutesOf(db: Db, batchId: string): Promise<string[]> {
  const rows = await db
    .selectDistinct({ instituteId: batchClasses.instituteId })
    .from(batchClasses)
    .where(eq(batchClasses.batchId, batchId))
    .orderBy(batchClasses.instituteId)
    .limit(20);
  return rows.map((r) => r.instituteId);
}
