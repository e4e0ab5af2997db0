import { sql } from 'drizzle-orm';
import { type Db, execute } from './sql.ts';
import type { BatchLane } from './types.ts';

/**
 * How many batches of each institute wait, not started, in `lane`: where a new one of that
 * institute joins its institute's line (the queue interleaves institutes by that position).
 */
export async function backlogOf(db: Db, lane: BatchLane, instituteIds: readonly string[]): Promise<Map<string, number>> {
  if (instituteIds.length === 0) return new Map();
  const result = await execute<{ institute_id: string; waiting: number }>(
    db,
    sql`
    select institute_id, count(*)::int as waiting from batch_classes
     where lane = ${lane}::batch_lane and state = 'pending' and institute_id = any(${sql.param([...new Set(instituteIds)])}::text[])
     group by institute_id`,
  );
  return new Map(result.rows.map((r) => [r.institute_id, r.waiting]));
}
