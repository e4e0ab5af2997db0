// The queue's lanes as operators see them: how many batches wait in each, and for how long the
// oldest has (from PostgreSQL, so they are right even while Redis is being rebuilt).
import { type LaneStat, QUEUE_LANES, type QueueLane } from '../mapping/index.ts';

export { QUEUE_LANES, laneStats } from '../mapping/index.ts';
export type { LaneStat, QueueLane };

const LABELS: Record<QueueLane, string> = { under_way: 'under way', live: 'live', operator: 'operator', backfill: 'backfill' };

/** "lanes: under way 8 · live 0 · operator 0 · backfill 2345 (oldest 12.0 min)". */
export function formatLanes(stats: Record<QueueLane, LaneStat>): string {
  const parts = QUEUE_LANES.map((lane) => {
    const { batches, oldestSeconds } = stats[lane];
    return batches === 0 ? `${LABELS[lane]} 0` : `${LABELS[lane]} ${batches} (oldest ${formatAge(oldestSeconds)})`;
  });
  return `lanes: ${parts.join(' · ')}`;
}

function formatAge(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7_200) return `${(seconds / 60).toFixed(1)} min`;
  return `${(seconds / 3_600).toFixed(1)} h`;
}
