import { sql } from 'drizzle-orm';
import { type Db, execute } from './sql.ts';

/** Every institute with a batch that is not abandoned. */
export async function institutesWithBatches(db: Db): Promise<string[]> {
  const result = await execute<{ institute_id: string }>(db, sql`select distinct institute_id from batch_classes where state <> 'abandoned'`);
  return result.rows.map((r) => r.institute_id);
}
