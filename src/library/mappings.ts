// Reading mappings (batch → ClassID + join link) for the integrator's own code. The join link is
// returned in full here: the caller asked for it and is trusted to treat it as the secret it is.
import type { BatchState, Db } from '../mapping/index.ts';
import { type BatchView, findBatch, listBatches as listRows, viewOf } from '../read-model/index.ts';

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
  const row = await findBatch(db, { instituteId, batchId });
  return row && viewOf(row);
}

/** Oldest first, in pages; stable under concurrent inserts (the cursor is the row's serial id). */
export async function listBatches(db: Db, query: ListBatchesQuery = {}): Promise<BatchPage> {
  const limit = Math.min(1_000, Math.max(1, Math.trunc(query.limit ?? 100)));
  const page = await listRows(
    db,
    { state: query.state, instituteId: query.instituteId },
    { limit, afterId: query.cursor ? cursorValue(query.cursor) : undefined },
  );
  return { batches: page.rows.map(viewOf), next: page.nextAfterId === null ? null : String(page.nextAfterId) };
}

function cursorValue(cursor: string): number {
  const id = Number(cursor);
  if (!Number.isSafeInteger(id) || id < 0) throw new RangeError(`cursor ${JSON.stringify(cursor)} is not one listBatches returned`);
  return id;
}
