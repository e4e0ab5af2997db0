// The reconciliation_runs record: opened when a pass starts (a pass that dies still leaves a row
// with no finished_at), closed with its counts, repairs and error.
import { desc, eq, isNotNull, sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { reconciliationRuns } from '../db/schema/index.ts';

export async function openRun(db: Db, trigger: string, dryRun: boolean): Promise<{ id: number; startedAt: Date }> {
  const [row] = await db
    .insert(reconciliationRuns)
    .values({ trigger, dryRun })
    .returning({ id: reconciliationRuns.id, startedAt: reconciliationRuns.startedAt });
  return row!;
}

export interface RunClose {
  institutes: string[];
  counts: Record<string, number>;
  repairs: Record<string, unknown>;
  error: string | null;
  linkCheckCursor: number | null;
}

export async function closeRun(db: Db, id: number, close: RunClose): Promise<Date> {
  const [row] = await db
    .update(reconciliationRuns)
    .set({ ...close, finishedAt: sql`clock_timestamp()` })
    .where(eq(reconciliationRuns.id, id))
    .returning({ finishedAt: reconciliationRuns.finishedAt });
  return row?.finishedAt ?? new Date();
}

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

export async function recentRuns(db: Db, limit = 20) {
  return db.select().from(reconciliationRuns).orderBy(desc(reconciliationRuns.id)).limit(limit);
}
