import { type SQL, sql } from 'drizzle-orm';
import { type Db, execute } from './sql.ts';

/** Institutes under which a batch id is known (a batch id is unique only within its institute). */
export async function institutesOf(db: Db, batchId: string): Promise<string[]> {
  const { rows } = await execute<{ instituteId: string }>(db, institutesOfStatement(batchId));
  return rows.map((r) => r.instituteId);
}

/**
 * The first 20 institutes, by name, with a batch `batchId`. The batch id is the second column of
 * the (institute_id, batch_id) key, so a lookup by it alone read the whole key (a 404 cost what the
 * table holds); instead each institute is found from the key by skipping to the next one (two
 * index probes each) and asked for the batch: the cost grows with institutes, not batches.
 */
export function institutesOfStatement(batchId: string): SQL {
  return sql`with recursive institutes(id) as (
      (select institute_id from batch_classes order by institute_id limit 1)
      union all
      select (select b.institute_id from batch_classes b where b.institute_id > i.id order by b.institute_id limit 1)
        from institutes i where i.id is not null)
    select i.id as "instituteId" from institutes i
     where i.id is not null and exists (select 1 from batch_classes b where b.institute_id = i.id and b.batch_id = ${batchId})
     order by i.id limit 20`;
}
