import { sql } from 'drizzle-orm';
import { type Db, execute, keyTable } from './sql.ts';
import type { BatchKey, BatchLane, BatchState } from './types.ts';

/** The current state and lane of each named batch that exists. */
export async function statesOf(db: Db, keys: readonly BatchKey[]): Promise<(BatchKey & { state: BatchState; lane: BatchLane })[]> {
  if (keys.length === 0) return [];
  const result = await execute<BatchKey & { state: BatchState; lane: BatchLane }>(
    db,
    sql`
    with v as (${keyTable(keys)})
    select b.institute_id as "instituteId", b.batch_id as "batchId", b.state, b.lane
      from batch_classes b join v on b.institute_id = v.institute_id and b.batch_id = v.batch_id`,
  );
  return result.rows;
}
