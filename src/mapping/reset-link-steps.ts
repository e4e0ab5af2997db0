import { sql } from 'drizzle-orm';
import { type Db, execute, traceIdNow } from './sql.ts';
import type { BatchKey } from './types.ts';

/**
 * Synced rows whose join link is blank or changed on the remote go back to `created` (edit-class and
 * get-class run again); the stale link is cleared so nobody hands it out meanwhile. A row that moved
 * since it was classified, or that a runner holds, is left alone. Each change gets a `repair` line.
 */
export async function resetLinkSteps(db: Db, rows: readonly { rowId: number; reason: string }[], runId: number): Promise<BatchKey[]> {
  if (rows.length === 0) return [];
  const result = await execute<BatchKey>(
    db,
    sql`
    with v as (
      select unnest(${sql.param(rows.map((r) => r.rowId))}::bigint[]) as id, unnest(${sql.param(rows.map((r) => r.reason))}::text[]) as reason
    ), changed as (
      update batch_classes b
         set state = 'created', join_link = null, link_enabled_at = null, synced_at = null, lane = 'operator', lane_since = now(), updated_at = now()
        from v
       where b.id = v.id and b.state = 'synced' and b.class_id is not null and b.lease_owner is null
      returning b.id, b.institute_id, b.batch_id, b.class_id, v.reason
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, class_id, trace_id, detail)
      select id, 'repair', 'synced', 'created', class_id, ${traceIdNow()},
             jsonb_build_object('category', 'link_missing', 'action', 'rerun_link_steps', 'reason', reason, 'reconciliationRunId', ${runId}::bigint)
        from changed
    )
    select institute_id as "instituteId", batch_id as "batchId" from changed`,
  );
  return result.rows;
}
