import { sql } from 'drizzle-orm';
import { MAY_HAVE_CLASS } from './doubt.ts';
import { type Db, execute } from './sql.ts';

/** Every institute with a batch that is not abandoned, or abandoned while a class of it may exist. */
export async function institutesWithBatches(db: Db): Promise<string[]> {
  const result = await execute<{ institute_id: string }>(
    db,
    sql`select distinct b.institute_id from batch_classes b where b.state <> 'abandoned' or ${MAY_HAVE_CLASS}`,
  );
  return result.rows.map((r) => r.institute_id);
}
