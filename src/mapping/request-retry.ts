import { sql } from 'drizzle-orm';
import { RESUME_STATE } from './doubt.ts';
import { type Db, execute, keyTable, stateList, traceIdNow } from './sql.ts';
import type { BatchKey, BatchLane, BatchState } from './types.ts';

/** The states an operator's retry puts back: those a failure or a doubt left waiting for one. */
const RETRYABLE_STATES: readonly BatchState[] = ['failed', 'needs_review'];

export interface RetryRow extends BatchKey {
  from: BatchState;
  to: BatchState;
  /** `operator` once put back. */
  lane: BatchLane;
}

/**
 * Puts `failed` and `needs_review` batches back, in the operator lane, where they can safely resume
 * (never before an add-class that may have made a class), with a `retry_requested` line in each one's audit trail.
 * Every named batch that exists comes back with its state before and after. When any of them is
 * abandoned, nothing is changed: giving a batch up is undone only on purpose (`abandon --undo`).
 */
export async function requestRetry(db: Db, target: { keys: readonly BatchKey[] } | { allFailed: true }): Promise<RetryRow[]> {
  const targets =
    'keys' in target
      ? sql`select b.id, b.institute_id, b.batch_id, b.state, b.lane from batch_classes b join (${keyTable(target.keys)}) v on b.institute_id = v.institute_id and b.batch_id = v.batch_id`
      : sql`select b.id, b.institute_id, b.batch_id, b.state, b.lane from batch_classes b where b.state = 'failed'`;
  const result = await execute<RetryRow>(
    db,
    sql`
    with targets as (${targets}), changed as (
      update batch_classes b set state = ${RESUME_STATE}, failed_at = null, review = null, attempts = 0, lane = 'operator', lane_since = now(), updated_at = now()
        from targets t
       where b.id = t.id and b.state in (${stateList(RETRYABLE_STATES)})
         and not exists (select 1 from targets a where a.state = 'abandoned')
      returning b.id, b.state, b.lane, b.class_id, t.state as from_state
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, class_id, trace_id)
      select id, 'retry_requested', from_state::text, state::text, class_id, ${traceIdNow()} from changed
    )
    select t.institute_id as "instituteId", t.batch_id as "batchId", t.state as "from", coalesce(c.state, t.state) as "to", coalesce(c.lane, t.lane) as "lane"
      from targets t left join changed c on c.id = t.id
     order by t.id`,
  );
  return result.rows;
}
