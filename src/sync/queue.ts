import { Queue, type Telemetry } from 'bullmq';
import { queueTelemetry } from '../telemetry/queue-telemetry.ts';
import type { Redis } from '../redis/connection.ts';
import { within } from '../support/timeout.ts';
import type { BatchState } from '../mapping/index.ts';
import { type BatchKey, jobIdFor } from './keys.ts';
import { type QueueLane, priorityOf } from './lanes.ts';
import { cutAt } from './names.ts';
import type { SyncFailureKind } from './errors.ts';

export const SYNC_QUEUE = 'batch-sync';
/** Operator work and backfill: a queue with workers of their own, so they never hold a worker slot live work needs. */
export const BACKGROUND_QUEUE = 'batch-sync-background';
export const BACKOFF_STRATEGY = 'full-jitter';

export type SyncJobData = BatchKey & {
  receivedAt?: string;
  lane?: QueueLane;
  /** The step of the job's newest retried failure and how many in a row it had there: what its backoff reads (src/sync/backoff.ts). */
  stepFailures?: StepFailures;
};

/**
 * A job's consecutive failures in one step: the batch's state its run stopped in, or BEFORE_RUN for a
 * failure before any run held the lease; and the remote's Retry-After on that failure, when it sent one.
 */
export interface StepFailures {
  step: BatchState | typeof BEFORE_RUN;
  /** The kind of the failures (src/sync/errors.ts): another kind in the same step counts from 1. */
  kind: SyncFailureKind;
  n: number;
  retryAfterMs?: number;
}

/** The step of a failure before a run held the batch's lease (no state of the batch is known then). */
export const BEFORE_RUN = 'before_run';

type BullQueue = Queue<SyncJobData, SyncResult, string>;
/** The sync queue (batches under way and live ones) with the background queue beside it. */
export type SyncQueue = BullQueue & { readonly background: BullQueue };
export interface SyncResult {
  state: string;
  classId: string | null;
}

export interface SyncQueueOptions {
  connection: Redis;
  prefix: string;
  attempts: number;
  /** Traces each add as the parent of the job's runs; defaults to this process's (none when nothing traces). */
  telemetry?: Telemetry | undefined;
}

export function createSyncQueue({ connection, prefix, attempts, telemetry = queueTelemetry() }: SyncQueueOptions): SyncQueue {
  const open = (name: string) =>
    new Queue<SyncJobData, SyncResult, string>(name, {
      connection,
      prefix,
      ...(telemetry ? { telemetry } : {}),
      defaultJobOptions: {
        attempts,
        backoff: { type: BACKOFF_STRATEGY },
        // Postgres keeps the history; Redis keeps enough for the dashboard and de-duplication.
        removeOnComplete: { age: 24 * 3600, count: 5_000 },
        removeOnFail: { age: 7 * 24 * 3600, count: 20_000 },
      },
    });
  return Object.assign(open(SYNC_QUEUE), { background: open(BACKGROUND_QUEUE) });
}

/** Both queues, for dashboards, metrics and cleanup. */
export const bothQueues = (queue: SyncQueue): BullQueue[] => [queue, queue.background];

/** The queue a lane's jobs wait in: operator work and backfill in the background queue. */
export function queueFor(queue: SyncQueue, lane: QueueLane): BullQueue {
  return lane === 'operator' || lane === 'backfill' ? queue.background : queue;
}

/** Closes both queues (their shared connection stays open: its owner closes it). */
export async function closeQueues(queue: SyncQueue): Promise<void> {
  await Promise.all(bothQueues(queue).map((q) => q.close()));
}

/** Where a job goes in the queue: its lane, and its place in its institute's line there. */
export interface Placement {
  lane: QueueLane;
  position?: number;
}

/** The job of one batch: one id per batch, its lane in its data and its name (for the dashboard), its priority. */
export function syncJob(key: BatchKey, placement: Placement = { lane: 'live' }) {
  // What the queue dashboard lists: the lane, the institute (so the account serving it), the batch.
  const name = jobName(`${placement.lane} · ${key.instituteId} · ${key.batchId}`);
  const data: SyncJobData = { instituteId: key.instituteId, batchId: key.batchId, lane: placement.lane };
  return { name, data, opts: { jobId: jobIdFor(key), priority: priorityOf(placement.lane, placement.position) } };
}

/** The longest job name kept, in UTF-16 units (what `String.length` counts). */
export const JOB_NAME_MAX = 200;

/**
 * A job's name as the dashboard lists it: cut to JOB_NAME_MAX the way class names are (names.ts),
 * never inside a character (half an emoji in a batch id would be a lone surrogate).
 */
export function jobName(text: string): string {
  return cutAt(text, JOB_NAME_MAX);
}

/**
 * Right after creation BullMQ is still loading its scripts on the connection; quitting under it
 * rejects those commands where nobody can catch them. Waits for that, but not for a Redis that is
 * down (it would never come).
 */
export async function waitForQueueReady(queue: SyncQueue, boundMs = 2_000): Promise<void> {
  await within(Promise.all(bothQueues(queue).map((q) => q.waitUntilReady())), boundMs).catch(() => undefined);
}
