import { sql } from 'drizzle-orm';
import { type Db, execute, traceIdNow } from './sql.ts';
import type { BatchKey } from './types.ts';

/**
 * Stores each candidate as its batch's ClassID (state `created`) unless the row left needs_review or
 * the class got mapped elsewhere meanwhile. The review evidence it replaces is kept in the audit event.
 */
export async function adoptCandidates(
  db: Db,
  adoptions: readonly { rowId: number; classId: string }[],
  runId: number,
): Promise<(BatchKey & { classId: string })[]> {
  if (adoptions.length === 0) return [];
  const result = await execute<BatchKey & { classId: string }>(
    db,
    sql`
    with v as (
      select unnest(${sql.param(adoptions.map((a) => a.rowId))}::bigint[]) as id, unnest(${sql.param(adoptions.map((a) => a.classId))}::text[]) as class_id
    ), changed as (
      update batch_classes b
         set class_id = v.class_id, state = 'created', class_created_at = now(), review = null,
             last_error = null, last_error_kind = null, failed_at = null, attempts = 0, lane = 'operator', lane_since = now(), updated_at = now()
        from v
       where b.id = v.id and b.state = 'needs_review' and b.class_id is null
         and not exists (select 1 from batch_classes o where o.class_id = v.class_id)
      -- A sub-select in RETURNING reads the row as it was before this UPDATE: the evidence it replaces.
      returning b.id, b.institute_id, b.batch_id, b.class_id, (select p.review from batch_classes p where p.id = b.id) as previous_review
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, class_id, trace_id, detail)
      select id, 'repair', 'needs_review', 'created', class_id, ${traceIdNow()},
             jsonb_build_object('category', 'needs_review_resolved', 'action', 'adopt', 'previousReview', previous_review, 'reconciliationRunId', ${runId}::bigint)
        from changed
    )
    select institute_id as "instituteId", batch_id as "batchId", class_id as "classId" from changed`,
  );
  return result.rows;
}
