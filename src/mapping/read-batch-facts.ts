import { sql } from 'drizzle-orm';
import { type Db, execute, keyTable } from './sql.ts';
import type { BatchKey, BatchState } from './types.ts';

/** What an operator command needs to explain itself about a batch. */
export interface BatchFacts extends BatchKey {
  state: BatchState;
  classId: string | null;
  leasedUntil: Date | null;
}

/** The facts of each named batch that exists. */
export async function readBatchFacts(db: Db, keys: readonly BatchKey[]): Promise<BatchFacts[]> {
  if (keys.length === 0) return [];
  const result = await execute<BatchFacts>(
    db,
    sql`
    with v as (${keyTable(keys)})
    select b.institute_id as "instituteId", b.batch_id as "batchId", b.state, b.class_id as "classId", b.lease_expires_at as "leasedUntil"
      from batch_classes b join v on b.institute_id = v.institute_id and b.batch_id = v.batch_id`,
  );
  // Raw statements hand timestamps over as text.
  return result.rows.map((r) => ({ ...r, leasedUntil: r.leasedUntil === null ? null : new Date(r.leasedUntil) }));
}
