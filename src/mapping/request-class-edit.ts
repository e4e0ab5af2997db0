import { sql } from 'drizzle-orm';
import { type Db, execute, traceIdNow } from './sql.ts';
import type { BatchKey } from './types.ts';

/**
 * An edit-class a reconciliation pass asks a sync run to make, guarded by what the pass read (the
 * row's revision and class). Two forms:
 *   rename   a `synced` batch whose class is listed under another name: its class name is sent again
 *   archive  a `cancelled` batch whose class is visible: archived again (archived_at cleared)
 */
export type ClassEditRequest = { rowId: number; classId: string; revision: number } & (
  | { kind: 'rename' /** The name the listing showed (for the audit trail). */; listedName: string }
  | { kind: 'archive' }
);

/**
 * Records each request as a change for the batch's sync run to apply (`revision + 1`; a rename also
 * sets `next_class_name = class_name`, an archive clears `archived_at`), and moves the batch to the
 * operator lane, where the caller re-enqueues it. Never calls the remote: the run applies it under
 * its lease. A request applies only while its row is as read: same class, same revision, no runner
 * holding it, and still `synced` with no name waiting (rename) or still `cancelled` (archive).
 * Each applied request gets a `repair` line in the batch's audit trail; the applied ones come back.
 */
export async function requestClassEdit(db: Db, requests: readonly ClassEditRequest[], runId: number): Promise<(BatchKey & { rowId: number })[]> {
  if (requests.length === 0) return [];
  const column = <T>(pick: (r: ClassEditRequest) => T) => sql.param(requests.map(pick));
  const result = await execute<BatchKey & { rowId: number }>(
    db,
    sql`
    with v as (
      select unnest(${column((r) => r.rowId)}::bigint[]) as id, unnest(${column((r) => r.classId)}::text[]) as class_id,
             unnest(${column((r) => r.revision)}::int[]) as revision, unnest(${column((r) => r.kind)}::text[]) as kind,
             unnest(${column((r) => (r.kind === 'rename' ? r.listedName : null))}::text[]) as listed_name
    ), changed as (
      update batch_classes b
         set revision = b.revision + 1,
             next_class_name = case when v.kind = 'rename' then b.class_name else b.next_class_name end,
             archived_at = case when v.kind = 'archive' then null else b.archived_at end,
             lane = 'operator', lane_since = now(), updated_at = now()
        from v
       where b.id = v.id and b.class_id = v.class_id and b.revision = v.revision and b.lease_owner is null
         and ((v.kind = 'rename' and b.state = 'synced' and b.next_class_name is null)
           or (v.kind = 'archive' and b.state = 'cancelled'))
      returning b.id, b.institute_id, b.batch_id, b.class_id, b.state, v.kind, v.listed_name
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, class_id, trace_id, detail)
      select id, 'repair', state::text, state::text, class_id, ${traceIdNow()},
             case when kind = 'rename'
               then jsonb_build_object('category', 'name_drift', 'action', 'request_edit', 'listedName', listed_name, 'reconciliationRunId', ${runId}::bigint)
               else jsonb_build_object('category', 'cancelled_visible', 'action', 'request_edit', 'reconciliationRunId', ${runId}::bigint)
             end
        from changed
    )
    select id::float8 as "rowId", institute_id as "instituteId", batch_id as "batchId" from changed`,
  );
  return result.rows;
}
