import { sql } from 'drizzle-orm';
import type { Db } from './sql.ts';

/**
 * Stores a ClassID we know was just created even though the run lost its lease: the class exists
 * whoever holds the lease now, and forgetting it is how duplicates start. Fills only an empty slot;
 * false when the batch already has a class (reconciliation then reports ours as an orphan).
 */
export async function claimCreatedClass(db: Db, rowId: number, classId: string): Promise<boolean> {
  const result = await db.execute(sql`
    update batch_classes set class_id = ${classId}, state = 'created', class_created_at = now(), updated_at = now()
     where id = ${rowId} and class_id is null and state in ('pending', 'creating')`);
  return (result.rowCount ?? 0) > 0;
}
