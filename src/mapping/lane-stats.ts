import { type SQL, sql } from 'drizzle-orm';
import { type Db, execute, stateList } from './sql.ts';
import { BATCH_LANES, QUEUE_LANES, type QueueLane, UNDER_WAY_STATES } from './types.ts';

export interface LaneStat {
  /** Unfinished batches in the lane. */
  batches: number;
  /** Seconds the one waiting longest has been in its lane (0 when the lane is empty). */
  oldestSeconds: number;
}

const UNDER_WAY = sql`state in (${stateList(UNDER_WAY_STATES)})`;

/**
 * Every lane's depth and oldest wait, from PostgreSQL (so a wiped Redis changes nothing). Depths are
 * sums of batch_counts; each oldest wait is the first entry of an index (batch_classes_<lane>_wait_idx,
 * whose predicate names the lane as a constant, and batch_classes_under_way_since_idx): one statement that reads a few rows at any size.
 */
export async function laneStats(db: Db): Promise<Record<QueueLane, LaneStat>> {
  const result = await execute<{ lane: QueueLane; batches: string | null; oldest: number | null }>(db, laneStatsStatement());
  const stats = Object.fromEntries(QUEUE_LANES.map((lane) => [lane, { batches: 0, oldestSeconds: 0 }])) as Record<QueueLane, LaneStat>;
  for (const row of result.rows) stats[row.lane] = { batches: Number(row.batches ?? 0), oldestSeconds: Math.max(0, row.oldest ?? 0) };
  return stats;
}

/** laneStats' one statement (exported for its plan: the tests and bench:scale). */
export function laneStatsStatement(): SQL {
  const oldest = BATCH_LANES.map(
    (lane) =>
      sql`select ${lane}::text as lane, (select lane_since from batch_classes where state = 'pending' and lane = ${sql.raw(`'${lane}'`)} order by lane_since limit 1) as since`,
  );
  return sql`
    with depth as (
      select case when ${UNDER_WAY} then 'under_way' else lane::text end as lane, sum(n) as batches
        from batch_counts where state = 'pending' or ${UNDER_WAY} group by 1
    ), oldest as (
      select 'under_way'::text as lane, (select lane_since from batch_classes where ${UNDER_WAY} order by lane_since limit 1) as since
      ${sql.join(
        oldest.map((select) => sql`union all ${select}`),
        sql` `,
      )}
    )
    select o.lane, d.batches, extract(epoch from (now() - o.since))::float8 as oldest from oldest o left join depth d using (lane)`;
}
