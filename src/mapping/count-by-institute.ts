import { count } from 'drizzle-orm';
import { batchClasses } from '../db/schema/index.ts';
import type { Db } from './sql.ts';
import type { BatchState } from './types.ts';

/** How many batches each institute has in each state (only the pairs that occur). */
export async function countByInstituteAndState(db: Db): Promise<{ instituteId: string; state: BatchState; n: number }[]> {
  const rows = await db
    .select({ instituteId: batchClasses.instituteId, state: batchClasses.state, n: count() })
    .from(batchClasses)
    .groupBy(batchClasses.instituteId, batchClasses.state);
  return rows.map((row) => ({ ...row, n: Number(row.n) }));
}
