import { reconciliationRuns } from '../db/schema/index.ts';
import type { Db } from './sql.ts';

/** A reconciliation pass starts: its row is written first, so a pass that dies still shows. */
export async function openRun(db: Db, trigger: string, dryRun: boolean): Promise<{ id: number; startedAt: Date }> {
  const [row] = await db
    .insert(reconciliationRuns)
    .values({ trigger, dryRun })
    .returning({ id: reconciliationRuns.id, startedAt: reconciliationRuns.startedAt });
  if (!row) throw new Error('inserting a reconciliation_runs row returned nothing');
  return row;
}
