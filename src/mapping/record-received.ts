import { type SQL, sql } from 'drizzle-orm';
import { placeOf, waitingLineEnd } from './lines.ts';
import { type Db, execute, traceIdNow } from './sql.ts';
import type { BatchKey, BatchLane, StoredEvent } from './types.ts';

export interface ReceivedBatch {
  event: StoredEvent;
  /** The name add-class will send (the template applied). */
  className: string;
  /** The integrator's version of the batch, when it sent one. */
  version?: number | undefined;
}

/** A batch recorded just now, with its job's place in its institute's line in the lane (0 first). */
export interface RecordedBatch extends BatchKey {
  position: number;
}

/**
 * Records batches as `pending` in `lane`, each with the first line of its audit trail, in one
 * statement; a batch already recorded is left as it is (its lane too). Returns the batches recorded
 * just now, in the order given.
 *
 * Each new batch joins the end of its institute's line in the lane: its `line` is one more than the
 * last waiting batch's, and its job's place is that minus the line of the first one still waiting.
 * Both ends are read by key (batch_classes_waiting_line_idx), so a chunk costs the same whether a
 * thousand or a million batches wait. The place is kept (`place`): a rebuilt queue gives the job the same.
 * Batches that left the line out of turn behind its first still count until that one starts. Two chunks of one institute recorded at the same moment may
 * share places: their jobs then go in the order they were queued.
 *
 * The columns travel as five array parameters: a multi-row VALUES of 1,000 events built by the query
 * builder cost more CPU than everything else on the intake path (bench/intake.ts, --profile).
 */
export async function recordReceived(db: Db, batches: readonly ReceivedBatch[], lane: BatchLane = 'live'): Promise<RecordedBatch[]> {
  return (await execute<RecordedBatch>(db, recordReceivedStatement(batches, lane))).rows;
}

/** recordReceived's statement (bench/scale.ts shows its plan). */
export function recordReceivedStatement(batches: readonly ReceivedBatch[], lane: BatchLane): SQL {
  const laneValue = sql`${lane}::batch_lane`;
  return sql`
    with given as (
      select * from unnest(${sql.param(batches.map((b) => b.event.instituteId))}::text[], ${sql.param(batches.map((b) => b.event.batchId))}::text[],
                           ${sql.param(batches.map((b) => b.className))}::text[],
                           ${sql.param(batches.map((b) => JSON.stringify(b.event)))}::text[],
                           ${sql.param(batches.map((b) => b.version ?? null))}::bigint[])
             with ordinality as v(institute_id, batch_id, class_name, event, version, ord)
    ), fresh as (
      -- The first of each new batch: one already recorded keeps its place, and takes none.
      -- A probe of the key per batch (a lateral subquery with a limit is never turned into a join):
      -- as not exists, on a table not yet analyzed the planner hashed the whole table for each chunk.
      select distinct on (g.institute_id, g.batch_id) g.* from given g
        left join lateral (select true as found from batch_classes b where b.institute_id = g.institute_id and b.batch_id = g.batch_id limit 1) known on true
       where known.found is null
       order by g.institute_id, g.batch_id, g.ord
    ), ends as materialized (
      -- The lane as a value known only when the statement runs: the planner cannot then take a
      -- partial index of the lane's own (batch_classes_<lane>_wait_idx, batch_classes_backfill_idx)
      -- for the line's ends, which it did on a table not yet analyzed, reading the whole lane.
      select i.institute_id, ${waitingLineEnd('max', sql`i.institute_id`, sql`(select ${laneValue})`)} as last,
             ${waitingLineEnd('min', sql`i.institute_id`, sql`(select ${laneValue})`)} as first
        from (select distinct institute_id from fresh) i
    ), placed as (
      select numbered.*, ${placeOf(sql`numbered.line`, sql`numbered.first`)} as place
        from (select f.*, coalesce(e.last + 1, 0) + row_number() over (partition by f.institute_id order by f.ord) - 1 as line, coalesce(e.first, 0) as first
                from fresh f join ends e using (institute_id)) numbered
    ), inserted as (
      insert into batch_classes (institute_id, batch_id, class_name, event, version, lane, line, place)
      select institute_id, batch_id, class_name, event::jsonb, version, ${laneValue}, line, place from placed order by ord
      on conflict (institute_id, batch_id) do nothing
      returning id, institute_id, batch_id, place
    ), audit as (
      insert into batch_events (batch_row_id, type, to_state, trace_id)
      select id, 'received', 'pending', ${traceIdNow()} from inserted
    )
    select i.institute_id as "instituteId", i.batch_id as "batchId", i.place as position
      from inserted i join placed p using (institute_id, batch_id)
     order by p.ord`;
}
