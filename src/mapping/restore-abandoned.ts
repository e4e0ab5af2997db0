import { sql } from 'drizzle-orm';
import { reasonDetail } from './mark-abandoned.ts';
import { type Db, execute, keyTable, traceIdNow } from './sql.ts';
import type { BatchKey, BatchState } from './types.ts';

/** Returns each abandoned batch to the state it was abandoned from; its audit event in the same statement. */
export async function restoreAbandoned(db: Db, keys: readonly BatchKey[], reason: string | null): Promise<(BatchKey & { to: BatchState })[]> {
  const result = await execute<BatchKey & { to: BatchState }>(
    db,
    sql`
    with v as (${keyTable(keys)}), changed as (
      update batch_classes b
         set state = coalesce(b.abandoned_from, 'failed'), abandoned_from = null, abandoned_at = null, abandon_reason = null,
             lane = 'operator', lane_since = now(), updated_at = now()
        from v
       where b.institute_id = v.institute_id and b.batch_id = v.batch_id and b.state = 'abandoned'
      returning b.id, b.institute_id, b.batch_id, b.state
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, detail, trace_id)
      select id, 'abandon_undone', 'abandoned', state::text, ${reasonDetail(reason)}, ${traceIdNow()} from changed
    )
    select institute_id as "instituteId", batch_id as "batchId", state as "to" from changed`,
  );
  return result.rows;
}
