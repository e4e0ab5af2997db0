// Putting failed or needs_review batches back. The state a batch resumes from is derived from what
// is known to have happened, so a retry can never send a second add-class for a class that may exist.
import { and, eq, inArray, sql } from 'drizzle-orm';
import { appendEvents } from '../audit/events.ts';
import type { Db } from '../db/client.ts';
import { type BatchState, batchClasses } from '../db/schema/index.ts';
import type { BatchKey } from './keys.ts';
import type { SyncQueue } from './queue.ts';
import { requeue } from './sweep.ts';

const RESUME_STATE = sql`(case
  when ${batchClasses.classId} is not null and ${batchClasses.linkEnabledAt} is not null then 'link_enabled'
  when ${batchClasses.classId} is not null then 'created'
  when ${batchClasses.createSentAt} is not null then 'creating'
  else 'pending' end)::batch_state`;

export interface RetryResult {
  batchId: string;
  instituteId: string;
  from: BatchState;
  to: BatchState;
  queued: boolean;
}

export async function retryBatches(deps: { db: Db; queue: SyncQueue }, where: { keys?: BatchKey[]; allFailed?: boolean }): Promise<RetryResult[]> {
  if (!where.allFailed && !where.keys?.length) return [];
  const before = await deps.db
    .select({ instituteId: batchClasses.instituteId, batchId: batchClasses.batchId, state: batchClasses.state })
    .from(batchClasses)
    .where(
      where.allFailed
        ? eq(batchClasses.state, 'failed')
        : inArray(sql`(${batchClasses.instituteId}, ${batchClasses.batchId})`, (where.keys ?? []).map((k) => sql`(${k.instituteId}, ${k.batchId})`)),
    );
  const results: RetryResult[] = [];
  for (const row of before) {
    let to = row.state;
    if (row.state === 'failed' || row.state === 'needs_review') {
      const updated = await deps.db.transaction(async (tx) => {
        const [changed] = await tx
          .update(batchClasses)
          .set({ state: RESUME_STATE, failedAt: null, review: null, attempts: 0, updatedAt: sql`now()` })
          .where(and(eq(batchClasses.instituteId, row.instituteId), eq(batchClasses.batchId, row.batchId), eq(batchClasses.state, row.state)))
          .returning({ id: batchClasses.id, state: batchClasses.state, classId: batchClasses.classId });
        if (changed) {
          await appendEvents(tx, changed.id, [{ type: 'retry_requested', fromState: row.state, toState: changed.state, classId: changed.classId }]);
        }
        return changed;
      });
      to = updated?.state ?? row.state;
    }
    const queued = to === 'synced' ? false : await requeue(deps.queue, row);
    results.push({ ...row, from: row.state, to, queued });
  }
  return results;
}
