import { desc, isNotNull } from 'drizzle-orm';
import { reconciliationRuns } from '../db/schema/index.ts';
import type { Db } from './sql.ts';

/** Where the previous pass's join-link rotation stopped. */
export async function lastLinkCursor(db: Db): Promise<number | null> {
  const [row] = await db
    .select({ cursor: reconciliationRuns.linkCheckCursor })
    .from(reconciliationRuns)
    .where(isNotNull(reconciliationRuns.linkCheckCursor))
    .orderBy(desc(reconciliationRuns.id))
    .limit(1);
  return row?.cursor ?? null;
}
