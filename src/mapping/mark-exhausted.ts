import { sql } from 'drizzle-orm';
import { TERMINAL_STATES } from '../db/schema/index.ts';
import { type Db, ROW_B, decodeRow, execute, stateList, traceIdNow } from './sql.ts';
import type { BatchKey, BatchState, MappingRow } from './types.ts';

const terminal = stateList(TERMINAL_STATES);

/**
 * The last attempt failed: `failed` with the last error (a later `retry` resumes safely), and the
 * transition in the audit trail. Undefined when the batch is already at rest.
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
      update batch_classes b set state = 'failed', failed_at = now(), last_error = ${lastError}, last_error_kind = ${error.kind}, updated_at = now()
       where b.institute_id = ${key.instituteId} and b.batch_id = ${key.batchId} and b.state not in (${terminal})
      returning ${ROW_B}, (select p.state from batch_classes p where p.id = b.id) as "fromState"
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, class_id, error, attempt, worker_id, trace_id)
      select "id", 'transition', "fromState"::text, 'failed', "classId", ${lastError}, ${context.attempt}::int, ${context.workerId}, ${traceIdNow()} from updated
    )
    select * from updated`,
  );
  const [updated] = result.rows;
  if (!updated) return undefined;
  const { fromState, ...raw } = updated;
  return { from: fromState, row: decodeRow(raw) };
}
