import { count } from 'drizzle-orm';
import { BATCH_STATES, batchClasses } from '../db/schema/index.ts';
import type { Db } from './sql.ts';
import type { BatchState } from './types.ts';

/** How many batches are in each state (every state present, 0 when none). */
export async function countByState(db: Db): Promise<Record<BatchState, number>> {
  const rows = await db.select({ state: batchClasses.state, n: count() }).from(batchClasses).groupBy(batchClasses.state);
  const counts = Object.fromEntries(BATCH_STATES.map((s) => [s, 0])) as Record<BatchState, number>;
  for (const row of rows) counts[row.state] = Number(row.n);
  return counts;
}
