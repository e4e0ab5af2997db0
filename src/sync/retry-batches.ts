// Putting failed or needs_review batches back. The state a batch resumes from is derived from what
// is known to have happened (src/mapping/request-retry.ts), so a retry can never send a second
// add-class for a class that may exist.
import * as mapping from '../mapping/index.ts';
import { BatchAbandonedError } from './abandon-batches.ts';
import type { BatchKey } from './keys.ts';
import type { SyncQueue } from './queue.ts';
import { queueLaneOf } from './lanes.ts';
import { requeue } from './sweep.ts';

export interface RetryResult extends BatchKey {
  from: mapping.BatchState;
  to: mapping.BatchState;
  queued: boolean;
}

export async function retryBatches(deps: { db: mapping.Db; queue: SyncQueue }, where: { keys?: BatchKey[]; allFailed?: boolean }): Promise<RetryResult[]> {
  if (!where.allFailed && !where.keys?.length) return [];
  const rows = await mapping.requestRetry(deps.db, where.allFailed ? { allFailed: true } : { keys: where.keys ?? [] });
  // An abandoned batch comes back only through `abandon --undo`, so giving it up stays deliberate.
  const abandoned = rows.filter((row) => row.from === 'abandoned');
  if (abandoned.length > 0) throw new BatchAbandonedError(abandoned.map(({ instituteId, batchId }) => ({ instituteId, batchId })));
  const results: RetryResult[] = [];
  for (const row of rows) {
    const queued = row.to === 'synced' ? false : await requeue(deps.queue, row, { lane: queueLaneOf(row.lane, row.to) });
    results.push({ instituteId: row.instituteId, batchId: row.batchId, from: row.from, to: row.to, queued });
  }
  return results;
}
