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
 * table holds); instead each institute is asked for the batch (`eachInstitute`): the cost grows
 * with institutes, not batches.
 */
export function institutesOfStatement(batchId: string): SQL {
  return eachInstitute(sql`select i.id as "instituteId" from institutes i
     where exists (select 1 from batch_classes b where b.institute_id = i.id and b.batch_id = ${batchId})
     order by i.id limit 20`);
}

/**
 * `select`, with `institutes(id)` the institutes that have a batch, in order: each found from an
 * index on institute_id by skipping to the next name after the last (one probe an institute), not
 * by reading every row.
 */
export function eachInstitute(select: SQL): SQL {
  return sql`with recursive found(id) as (
      (select institute_id from batch_classes order by institute_id limit 1)
      union all
      select (select b.institute_id from batch_classes b where b.institute_id > f.id order by b.institute_id limit 1)
        from found f where f.id is not null),
    institutes(id) as (select id from found where id is not null)
    ${select}`;
}
