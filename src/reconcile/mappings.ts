// Bulk reads for a pass: every mapping of an institute in one select (src/mapping), and the job
// states of the few rows that might be stuck. No query per class: round trips grow with
// institutes, not with batches.
import * as mapping from '../mapping/index.ts';
import type { Db } from '../mapping/index.ts';
import { jobIdFor } from '../sync/keys.ts';
import { type SyncQueue, bothQueues } from '../sync/queue.ts';

export type Mapping = mapping.ReconcileRow;

/**
 * Every institute with a batch that is not abandoned, plus the default one. An institute whose batches
 * were all abandoned (e.g. one the remote refuses) is no longer read at all.
 */
export async function institutesToReconcile(db: Db, configured: readonly string[]): Promise<string[]> {
  return [...new Set([...configured, ...(await mapping.institutesWithBatches(db))])];
}

export const batchesOf = mapping.batchesOfInstitute;
export const loadMappings = mapping.reconcileRows;

const LIVE_STATES = new Set(['active', 'waiting', 'waiting-children', 'delayed', 'prioritized']);

/** Row ids among `rows` whose batch has no live job. Only stale rows are asked about. */
export async function withoutLiveJob(queue: SyncQueue, instituteId: string, rows: readonly Mapping[], concurrency = 32): Promise<Set<number>> {
  const stale = rows.filter((r) => r.stale);
  const result = new Set<number>();
  await eachLimited(stale, concurrency, async (row) => {
    const jobId = jobIdFor({ instituteId, batchId: row.batchId });
    const states = await Promise.all(bothQueues(queue).map((q) => q.getJobState(jobId)));
    if (!states.some((state) => LIVE_STATES.has(state))) result.add(row.id);
  });
  return result;
}

/** Runs `fn` over `items`, at most `limit` at a time (commands on one Redis connection pipeline). */
export async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  // One iterator shared by every lane: each item is taken by exactly one of them.
  const queue = items.values();
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    for (const item of queue) await fn(item);
  });
  await Promise.all(lanes);
}
