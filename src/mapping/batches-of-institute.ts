import { sql } from 'drizzle-orm';
import { type Db, execute } from './sql.ts';

/** How many batches of the institute are not abandoned, and the first `limit` of their ids. */
export async function batchesOfInstitute(db: Db, instituteId: string, limit: number): Promise<{ count: number; batchIds: string[] }> {
  const result = await execute<{ batch_id: string; total: number }>(
    db,
    sql`
    select batch_id, (count(*) over ())::int as total
      from batch_classes
     where institute_id = ${instituteId} and state <> 'abandoned'
     order by id
     limit ${limit}`,
  );
  return { count: result.rows[0]?.total ?? 0, batchIds: result.rows.map((r) => r.batch_id) };
}
