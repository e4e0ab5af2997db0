import { sql } from 'drizzle-orm';
import { CANCELLED_UNSENT, MAY_HAVE_CLASS, doubtReviewOf } from './doubt.ts';
import { reasonDetail } from './mark-abandoned.ts';
import { type Db, execute, keyTable, traceIdNow } from './sql.ts';
import type { BatchKey, BatchState } from './types.ts';

// Where an undone abandon leads, from the facts as they are now (a change may have arrived meanwhile):
// cancelled by the integrator with no class possible → `cancelled`; a class may exist → `needs_review`
// (an operator settles it, as before the abandon); else the state it was abandoned from, except that a
// needs_review whose doubt an operator ruled out (`abandon --confirm-no-class`) is `failed` (retry sends add-class).
const RESTORED = sql`(case
  when ${CANCELLED_UNSENT} then 'cancelled'
  when ${MAY_HAVE_CLASS} then 'needs_review'
  when b.abandoned_from = 'needs_review' then 'failed'
  else coalesce(b.abandoned_from, 'failed') end)::batch_state`;

/** Returns each abandoned batch to where its facts lead (see above); its audit event in the same statement. */
export async function restoreAbandoned(db: Db, keys: readonly BatchKey[], reason: string | null): Promise<(BatchKey & { to: BatchState })[]> {
  const result = await execute<BatchKey & { to: BatchState }>(
    db,
    sql`
    with v as (${keyTable(keys)}), changed as (
      update batch_classes b
         set state = ${RESTORED}, abandoned_from = null, abandoned_at = null, abandon_reason = null,
             applied_revision = case when ${CANCELLED_UNSENT} then b.revision else b.applied_revision end,
             review = case when ${MAY_HAVE_CLASS} then coalesce(b.review, ${doubtReviewOf('abandoned, and taken back, while an add-class of it was not settled')}) else b.review end,
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
