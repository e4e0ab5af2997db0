import { sql } from 'drizzle-orm';
import { type Db, execute, traceIdNow } from './sql.ts';
import type { BatchKey, BatchLane, StoredEvent } from './types.ts';

export interface ReceivedBatch {
  event: StoredEvent;
  /** The name add-class will send (the template applied). */
  className: string;
  /** The integrator's version of the batch, when it sent one. */
  version?: number | undefined;
}

/**
 * Records batches as `pending` in `lane`, each with the first line of its audit trail, in one
 * statement; a batch already recorded is left as it is (its lane too). Returns the batches recorded just now. The columns travel
 * as four array parameters: a multi-row VALUES of 1,000 events built by the query builder cost more
 * CPU than everything else on the intake path (bench/intake.ts, --profile).
 */
export async function recordReceived(db: Db, batches: readonly ReceivedBatch[], lane: BatchLane = 'live'): Promise<BatchKey[]> {
  const result = await execute<BatchKey>(
    db,
    sql`
    with inserted as (
      insert into batch_classes (institute_id, batch_id, class_name, event, version, lane)
      select institute_id, batch_id, class_name, event::jsonb, version, ${lane}::batch_lane
        from unnest(${sql.param(batches.map((b) => b.event.instituteId))}::text[], ${sql.param(batches.map((b) => b.event.batchId))}::text[],
                    ${sql.param(batches.map((b) => b.className))}::text[],
                    ${sql.param(batches.map((b) => JSON.stringify(b.event)))}::text[],
                    ${sql.param(batches.map((b) => b.version ?? null))}::bigint[]) as v(institute_id, batch_id, class_name, event, version)
      on conflict (institute_id, batch_id) do nothing
      returning id, institute_id, batch_id
    ), audit as (
      insert into batch_events (batch_row_id, type, to_state, trace_id)
      select id, 'received', 'pending', ${traceIdNow()} from inserted
    )
    select institute_id as "instituteId", batch_id as "batchId" from inserted`,
  );
  return result.rows;
}
