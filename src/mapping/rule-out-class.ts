import { sql } from 'drizzle-orm';
import { MAY_HAVE_CLASS } from './doubt.ts';
import { type Db, execute, keyTable, traceIdNow } from './sql.ts';
import type { BatchKey } from './types.ts';

/**
 * An operator checked the remote and states that no class of these abandoned batches exists: the
 * doubt of their add-class is ruled out (`create_sent_at` cleared), so reconciliation stops looking
 * for one, and an undo no longer leads to `needs_review`. Only abandoned batches in doubt change,
 * each with a `class_ruled_out` line; those come back.
 */
export async function ruleOutClass(db: Db, keys: readonly BatchKey[], reason: string | null): Promise<BatchKey[]> {
  if (keys.length === 0) return [];
  const result = await execute<BatchKey>(
    db,
    sql`
    with v as (${keyTable(keys)}), changed as (
      update batch_classes b set create_sent_at = null, create_ended_at = null, updated_at = now(),
             -- As forget-create.ts: a rename that waited beside the sent name is what the next add-class sends.
             class_name = coalesce(b.next_class_name, b.class_name), next_class_name = null
        from v
       where b.institute_id = v.institute_id and b.batch_id = v.batch_id and b.state = 'abandoned' and ${MAY_HAVE_CLASS}
      returning b.id, b.institute_id, b.batch_id, b.class_name
    ), audit as (
      insert into batch_events (batch_row_id, type, detail, trace_id)
      select id, 'class_ruled_out', jsonb_build_object('className', class_name, 'reason', ${reason}::text), ${traceIdNow()} from changed
    )
    select institute_id as "instituteId", batch_id as "batchId" from changed`,
  );
  return result.rows;
}
