import { sql } from 'drizzle-orm';
import { BATCH_STATES } from '../db/schema/index.ts';
import { type Db, execute } from './sql.ts';
import type { BatchState } from './types.ts';

/**
 * How many batches are in each state (every state present, 0 when none): the sum of batch_counts'
 * deltas (migrations/0013), a few rows per institute and state, however many batches there are.
 */
export async function countByState(db: Db): Promise<Record<BatchState, number>> {
  const { rows } = await execute<{ state: BatchState; n: string }>(db, sql`select state, sum(n) as n from batch_counts group by state`);
  const counts = Object.fromEntries(BATCH_STATES.map((s) => [s, 0])) as Record<BatchState, number>;
  for (const row of rows) counts[row.state] = Number(row.n);
  return counts;
}
