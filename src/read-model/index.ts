// The read model: what operator surfaces (CLI, HTTP API, metrics, library) show about batches. It
// reads through src/mapping and formats; surfaces import it, never each other.
export { type AccountCounts, NO_ACCOUNT, countByAccount, formatAccountCounts } from './accounts.ts';
export { type BatchView, formatBatch, notKnownUnder, viewOf } from './batch-view.ts';
export { refusedKeyLine } from './credentials.ts';
export { formatBatchDeliveries, formatDeliveries, lastAnswerOf } from './deliveries.ts';
export { type LaneStat, QUEUE_LANES, type QueueLane, formatLanes, laneStats } from './lanes.ts';
export { type TimelineEntry, formatTimeline } from './timeline.ts';
export { TERMINAL_STATES, countByState, findBatch, institutesOf, listBatches, outbox, readTimeline } from '../mapping/index.ts';
