import { desc } from 'drizzle-orm';
import { type ReconciliationRunRow, reconciliationRuns } from '../db/schema/index.ts';
import type { Db } from './sql.ts';

export type { ReconciliationRunRow };

/** The last `limit` reconciliation passes, newest first. */
export async function recentRuns(db: Db, limit = 20): Promise<ReconciliationRunRow[]> {
  return db.select().from(reconciliationRuns).orderBy(desc(reconciliationRuns.id)).limit(limit);
}
