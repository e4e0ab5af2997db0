import { sql } from 'drizzle-orm';
import { type Db, traceIdNow } from './sql.ts';

/**
 * Stuck batches a reconciliation pass re-enqueued: they move to the operator lane (where their job
 * now waits), and their timeline gets a line, though their state does not change.
 */
export async function recordRequeues(db: Db, rowIds: readonly number[], runId: number): Promise<void> {
  if (rowIds.length === 0) return;
  await db.execute(sql`
    with moved as (
      update batch_classes b set lane = 'operator', lane_since = now()
       where b.id = any(${sql.param([...rowIds])}::bigint[])
      returning b.id, b.state
    )
    insert into batch_events (batch_row_id, type, from_state, to_state, trace_id, detail)
    select id, 'repair', state::text, state::text, ${traceIdNow()},
           jsonb_build_object('category', 'stuck', 'action', 'requeue', 'reconciliationRunId', ${runId}::bigint)
      from moved`);
}
