import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { batchClasses } from '../db/schema/index.ts';
import type { Logger } from '../logger.ts';

/**
 * Stores a ClassID we know was just created even though this run lost its lease: the class exists
 * whoever holds the lease now, and forgetting it is how duplicates start. Only fills an empty slot.
 */
export async function claimCreatedClass(db: Db, rowId: number, classId: string, log: Logger): Promise<void> {
  const claimed = await db
    .update(batchClasses)
    .set({ classId, state: 'created', classCreatedAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(eq(batchClasses.id, rowId), isNull(batchClasses.classId), inArray(batchClasses.state, ['pending', 'creating'])))
    .returning({ id: batchClasses.id });
  if (claimed.length === 0) {
    log.error({ classId }, 'created a class after losing the lease and the batch already has another: reconciliation will report it as orphan_remote');
  }
}
