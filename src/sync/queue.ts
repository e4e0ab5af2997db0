import { Queue } from 'bullmq';
import type { Redis } from '../redis.ts';
import { type BatchKey, jobIdFor } from './keys.ts';

export const SYNC_QUEUE = 'batch-sync';
export const BACKOFF_STRATEGY = 'full-jitter';

export type SyncJobData = BatchKey & { receivedAt?: string };
export type SyncQueue = Queue<SyncJobData, SyncResult, string>;
export interface SyncResult {
  state: string;
  classId: string | null;
}

export interface SyncQueueOptions {
  connection: Redis;
  prefix: string;
  attempts: number;
}

export function createSyncQueue({ connection, prefix, attempts }: SyncQueueOptions): SyncQueue {
  return new Queue<SyncJobData, SyncResult, string>(SYNC_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: {
      attempts,
      backoff: { type: BACKOFF_STRATEGY },
      // Postgres keeps the history; Redis keeps enough for the dashboard and de-duplication.
      removeOnComplete: { age: 24 * 3600, count: 5_000 },
      removeOnFail: { age: 7 * 24 * 3600, count: 20_000 },
    },
  });
}

export function syncJob(key: BatchKey) {
  return { name: key.batchId.slice(0, 200), data: { instituteId: key.instituteId, batchId: key.batchId }, opts: { jobId: jobIdFor(key) } };
}

/**
 * Right after creation BullMQ is still loading its scripts on the connection; quitting under it
 * rejects those commands where nobody can catch them. Waits for that, but not for a Redis that is
 * down (it would never come).
 */
export async function settleQueue(queue: SyncQueue, boundMs = 2_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, boundMs);
  });
  await Promise.race([queue.waitUntilReady().then(() => {}, () => {}), bound]);
  clearTimeout(timer);
}
