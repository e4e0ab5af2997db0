import { sql } from 'drizzle-orm';
import { type Db, execute, stateList } from './sql.ts';
import { QUEUE_LANES, type QueueLane, UNDER_WAY_STATES } from './types.ts';

export interface LaneStat {
  /** Unfinished batches in the lane. */
  batches: number;
  /** Seconds the one waiting longest has been in its lane (0 when the lane is empty). */
  oldestSeconds: number;
}

const UNDER_WAY = sql`state in (${stateList(UNDER_WAY_STATES)})`;

/** Every lane's depth and oldest wait, from PostgreSQL (so a wiped Redis changes nothing). */
export async function laneStats(db: Db): Promise<Record<QueueLane, LaneStat>> {
  const result = await execute<{ lane: QueueLane; batches: number; oldest: number }>(
    db,
    sql`
    select case when ${UNDER_WAY} then 'under_way' else lane::text end as lane,
           count(*)::int as batches,
           extract(epoch from (now() - min(lane_since)))::float8 as oldest
      from batch_classes
     where state = 'pending' or ${UNDER_WAY}
     group by 1`,
  );
  const stats = Object.fromEntries(QUEUE_LANES.map((lane) => [lane, { batches: 0, oldestSeconds: 0 }])) as Record<QueueLane, LaneStat>;
  for (const row of result.rows) stats[row.lane] = { batches: row.batches, oldestSeconds: Math.max(0, row.oldest) };
  return stats;
}
