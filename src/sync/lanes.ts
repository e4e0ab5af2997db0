// Where a batch's job waits in the queue. BullMQ serves lower priorities first and equal ones in
// order of arrival, so each lane is a band of priorities, in this order of precedence:
//   under_way  a batch whose add-class was sent or done: it finishes before anything new starts
//   live       published as it happened
//   operator   put back by retry, abandon --undo or a reconciliation repair
//   backfill   history (import, enqueue --backfill)
// Inside a band, a job's place is its position in its institute's line: an institute's n-th waiting
// batch goes before any institute's (n+1)-th, so an import for one institute never makes another's
// wait for all of it (round robin by institute, in the order batches arrived).
// The lanes (QUEUE_LANES) and the states that count as under way (UNDER_WAY_STATES) are defined once,
// next to the batch states, and come from src/mapping.
import { type BatchLane, type BatchState, type QueueLane, UNDER_WAY_STATES } from '../mapping/index.ts';

export type { QueueLane };

const BANDS: Record<QueueLane, { base: number; span: number }> = {
  under_way: { base: 1, span: 1 },
  live: { base: 10, span: 499_990 },
  operator: { base: 500_000, span: 500_000 },
  backfill: { base: 1_000_000, span: 1_000_000 },
};

const UNDER_WAY: ReadonlySet<BatchState> = new Set(UNDER_WAY_STATES);

/** The lane a batch's job belongs in now: under way once its add-class was sent, else its own lane. */
export function queueLaneOf(lane: BatchLane, state: BatchState): QueueLane {
  return UNDER_WAY.has(state) ? 'under_way' : lane;
}

/** BullMQ priority of a job in `lane` at `position` (0-based) in its institute's line. */
export function priorityOf(lane: QueueLane, position = 0): number {
  const band = BANDS[lane];
  return band.base + Math.min(Math.max(0, Math.floor(position)), band.span - 1);
}

/**
 * The lane a priority belongs to (the dashboard and metrics read it back from a job). A job with no
 * priority (none or 0) was queued by hand, never by classroom-sync: it shows as `live`, the lane a
 * batch is received in. (BullMQ still runs it before every prioritised job; nothing says it is under way.)
 */
export function laneOfPriority(priority: number | undefined): QueueLane {
  if (!priority) return 'live';
  if (priority < BANDS.live.base) return 'under_way';
  if (priority < BANDS.operator.base) return 'live';
  if (priority < BANDS.backfill.base) return 'operator';
  return 'backfill';
}
