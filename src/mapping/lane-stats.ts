import { sql } from 'drizzle-orm';
import { type Db, execute } from './sql.ts';

/** Where an unfinished batch waits: under way (add-class sent or done), or its lane, not started yet. */
export type QueueLane = 'under_way' | 'live' | 'operator' | 'backfill';

export const QUEUE_LANES: readonly QueueLane[] = ['under_way', 'live', 'operator', 'backfill'];

export interface LaneStat {
  /** Unfinished batches in the lane. */
  batches: number;
  /** Seconds the one waiting longest has been in its lane (0 when the lane is empty). */
  oldestSeconds: number;
}

/** Every lane's depth and oldest wait, from PostgreSQL (so a wiped Redis changes nothing). */
export async function laneStats(db: Db): Promise<Record<QueueLane, LaneStat>> {
  const result = await execute<{ lane: QueueLane; batches: number; oldest: number }>(
    db,
    sql`
    select case when state in ('creating', 'created', 'link_enabled') then 'under_way' else lane::text end as lane,
           count(*)::int as batches,
           extract(epoch from (now() - min(lane_since)))::float8 as oldest
      from batch_classes
     where state in ('pending', 'creating', 'created', 'link_enabled')
     group by 1`,
  );
  const stats = Object.fromEntries(QUEUE_LANES.map((lane) => [lane, { batches: 0, oldestSeconds: 0 }])) as Record<QueueLane, LaneStat>;
  for (const row of result.rows) stats[row.lane] = { batches: row.batches, oldestSeconds: Math.max(0, row.oldest) };
  return stats;
}
