// Reading mappings (batch → ClassID + join link) for the integrator's own code. The join link is
// returned in full here: the caller asked for it and is trusted to treat it as the secret it is.
import { and, asc, eq, gt, type SQL } from 'drizzle-orm';
import { type BatchView, findBatch, viewOf } from '../commands/status.ts';
import type { Db } from '../db/client.ts';
import { type BatchState, batchClasses } from '../db/schema/index.ts';

export interface ListBatchesQuery {
  state?: BatchState;
  instituteId?: string;
  /** Page size, 1..1000 (default 100). */
  limit?: number;
  /** `next` of the previous page. */
  cursor?: string;
}

export interface BatchPage {
  batches: BatchView[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next: string | null;
}

export async function getBatch(db: Db, instituteId: string, batchId: string): Promise<BatchView | undefined> {
  const row = await findBatch(db, instituteId, batchId);
  return row && viewOf(row);
}

/** Oldest first, in pages; stable under concurrent inserts (the cursor is the row's serial id). */
export async function listBatches(db: Db, query: ListBatchesQuery = {}): Promise<BatchPage> {
  const limit = Math.min(1_000, Math.max(1, Math.trunc(query.limit ?? 100)));
  const conditions: SQL[] = [];
  if (query.state) conditions.push(eq(batchClasses.state, query.state));
  if (query.instituteId) conditions.push(eq(batchClasses.instituteId, query.instituteId));
  if (query.cursor) conditions.push(gt(batchClasses.id, cursorValue(query.cursor)));
  const rows = await db
    .select()
    .from(batchClasses)
    .where(and(...conditions))
    .orderBy(asc(batchClasses.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  return { batches: page.map(viewOf), next: rows.length > limit ? String(page[page.length - 1]!.id) : null };
}

function cursorValue(cursor: string): number {
  const id = Number(cursor);
  if (!Number.isSafeInteger(id) || id < 0) throw new RangeError(`cursor ${JSON.stringify(cursor)} is not one listBatches returned`);
  return id;
}
