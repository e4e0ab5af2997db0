import { type SQL, sql } from 'drizzle-orm';
import { MAY_HAVE_CLASS } from './doubt.ts';
import { eachInstitute } from './institutes-of.ts';
import { type Db, execute } from './sql.ts';

/** Every institute with a batch that is not abandoned, or abandoned while a class of it may exist. */
export async function institutesWithBatches(db: Db): Promise<string[]> {
  const result = await execute<{ institute_id: string }>(db, institutesWithBatchesStatement());
  return result.rows.map((r) => r.institute_id);
}

/**
 * Each institute (`eachInstitute`) asked for one such batch: `select distinct` read the whole table
 * on every reconciliation pass. An institute whose batches are all abandoned is still read through
 * (its abandoned rows, for one that may have a class).
 */
export function institutesWithBatchesStatement(): SQL {
  return eachInstitute(sql`select i.id as institute_id from institutes i
     where exists (select 1 from batch_classes b where b.institute_id = i.id and (b.state <> 'abandoned' or ${MAY_HAVE_CLASS}))`);
}
