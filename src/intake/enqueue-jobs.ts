// The jobs of batches intake recorded: one per unfinished batch, in the lane and place it was given.
import type { Logger } from '../logging/logger.ts';
import { type BatchState, TERMINAL_STATES } from '../mapping/index.ts';
import { withTimeout } from '../support/timeout.ts';
import { type Placement, type SyncQueue, queueFor, syncJob } from '../sync/queue.ts';
import { keyOf } from './apply.ts';

export interface ToQueue {
  instituteId: string;
  batchId: string;
  state: BatchState;
  placement: Placement;
  /** Set when its job was added. */
  queued: boolean;
}

/**
 * Re-posting a batch that is not finished re-enqueues it: harmless (one job id per batch), and it
 * heals a batch whose first enqueue failed. BullMQ waits for Redis to come back rather than failing;
 * an HTTP caller should not. A late success is harmless, and the sweep covers a late failure.
 */
export async function enqueueJobs(deps: { queue: SyncQueue; logger: Logger; enqueueTimeoutMs?: number | undefined }, results: ToQueue[]): Promise<void> {
  const queuedKeys = new Set<string>();
  const toQueue = results.filter((r) => {
    const k = keyOf(r);
    if (TERMINAL_STATES.includes(r.state) || queuedKeys.has(k)) return false;
    queuedKeys.add(k);
    return true;
  });
  const byQueue = new Map<ReturnType<typeof queueFor>, ReturnType<typeof syncJob>[]>();
  for (const r of toQueue) {
    const target = queueFor(deps.queue, r.placement.lane);
    const jobs = byQueue.get(target) ?? [];
    jobs.push(syncJob(r, r.placement));
    byQueue.set(target, jobs);
  }
  try {
    const added = Promise.all([...byQueue].map(([queue, jobs]) => queue.addBulk(jobs)));
    await withTimeout(added, deps.enqueueTimeoutMs ?? 2_000, 'Redis');
    for (const r of results) r.queued = queuedKeys.has(keyOf(r));
  } catch (error) {
    deps.logger.warn({ err: error, batches: toQueue.length }, 'batches recorded but not queued (Redis unavailable); the sweep will enqueue them');
  }
}
