import { sql } from 'drizzle-orm';
import { TERMINAL_STATES } from '../db/schema/index.ts';
import { doubtReviewOf, failureSet } from './doubt.ts';
import { type Db, ROW_B, decodeRow, execute, stateList, traceIdNow } from './sql.ts';
import type { BatchKey, BatchState, MappingRow } from './types.ts';

const terminal = stateList(TERMINAL_STATES);

/**
 * A job's last attempt failed before its run held the batch's lease (a run that held it records its
 * own last attempt, fenced: src/sync/run-end.ts): `failed` with the last error (a later `retry`
 * resumes safely), or `needs_review` when the batch may have a class (`cancelled` when it was
 * cancelled with nothing sent: src/mapping/doubt.ts), and the transition in the
 * audit trail. It writes only while nobody holds a live lease, as if it took one for this write: a
 * runner holding the batch (a change's job) owns it, and decides. Undefined when nothing was written.
 */
export async function markExhausted(
  db: Db,
  key: BatchKey,
  error: { message: string; kind: string },
  context: { attempt: number; workerId: string },
): Promise<{ from: BatchState; row: MappingRow } | undefined> {
  const lastError = `attempts exhausted: ${error.message}`;
  // A sub-select in RETURNING reads the row as it was before this UPDATE: the state we left.
  const result = await execute<MappingRow & { fromState: BatchState }>(
    db,
    sql`
    with updated as (
      update batch_classes b
         set ${failureSet(doubtReviewOf(lastError))},
             last_error = ${lastError}, last_error_kind = ${error.kind}, lease_epoch = b.lease_epoch + 1, updated_at = now()
       where b.institute_id = ${key.instituteId} and b.batch_id = ${key.batchId} and b.state not in (${terminal})
         and (b.lease_expires_at is null or b.lease_expires_at < now())
      returning ${ROW_B}, (select p.state from batch_classes p where p.id = b.id) as "fromState"
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, class_id, error, attempt, worker_id, trace_id)
      select "id", 'transition', "fromState"::text, "state"::text, "classId", ${lastError}, ${context.attempt}::int, ${context.workerId}, ${traceIdNow()} from updated
    )
    select * from updated`,
  );
  const [updated] = result.rows;
  if (!updated) return undefined;
  const { fromState, ...raw } = updated;
  return { from: fromState, row: decodeRow(raw) };
}
