import { sql } from 'drizzle-orm';
import { type Db, execute } from './sql.ts';
import type { BatchState } from './types.ts';

/** How many batches each institute has in each state (only the pairs that occur), from batch_counts. */
export async function countByInstituteAndState(db: Db): Promise<{ instituteId: string; state: BatchState; n: number }[]> {
  const { rows } = await execute<{ instituteId: string; state: BatchState; n: string }>(
    db,
    sql`select institute_id as "instituteId", state, sum(n) as n from batch_counts group by 1, 2 having sum(n) <> 0`,
  );
  return rows.map((row) => ({ ...row, n: Number(row.n) }));
}
