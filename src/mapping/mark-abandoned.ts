import { sql } from 'drizzle-orm';
import { MAY_HAVE_CLASS } from './doubt.ts';
import { type Db, execute, keyTable, stateList, traceIdNow } from './sql.ts';
import type { BatchKey, BatchState } from './types.ts';

/**
 * The states a batch can be abandoned from: none has a class, none is in the middle of a create (a
 * needs_review batch may have a class none of our rows knows: src/mapping/doubt.ts).
 */
export const ABANDONABLE_STATES: readonly BatchState[] = ['pending', 'failed', 'needs_review'];

/** The audit event's detail: the operator's reason, or nothing. */
export const reasonDetail = (reason: string | null) => (reason === null ? sql`null::jsonb` : sql`jsonb_build_object('reason', ${reason}::text)`);

/** A batch given up, the state it left, and whether a class of it may exist on the remote. */
export type Abandoned = BatchKey & { from: BatchState; mayHaveClass: boolean };

/**
 * `abandoned` for each batch that can be given up (no class, not leased, in an abandonable state),
 * remembering the state it left; its audit event is written by the same statement. Returns the
 * batches changed, with that state.
 */
export async function markAbandoned(db: Db, keys: readonly BatchKey[], reason: string | null): Promise<Abandoned[]> {
  const abandonable = stateList(ABANDONABLE_STATES);
  const result = await execute<Abandoned>(
    db,
    sql`
    with v as (${keyTable(keys)}), changed as (
      update batch_classes b
         set state = 'abandoned', abandoned_from = b.state, abandoned_at = now(), abandon_reason = ${reason}, updated_at = now()
        from v
       where b.institute_id = v.institute_id and b.batch_id = v.batch_id and b.state in (${abandonable})
         and b.class_id is null and (b.lease_expires_at is null or b.lease_expires_at < now())
      returning b.id, b.institute_id, b.batch_id, b.abandoned_from, ${MAY_HAVE_CLASS} as may_have_class
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, detail, trace_id)
      select id, 'abandoned', abandoned_from::text, 'abandoned', ${reasonDetail(reason)}, ${traceIdNow()} from changed
    )
    select institute_id as "instituteId", batch_id as "batchId", abandoned_from as "from", may_have_class as "mayHaveClass" from changed`,
  );
  return result.rows;
}
