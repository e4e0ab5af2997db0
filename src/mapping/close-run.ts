import { eq, sql } from 'drizzle-orm';
import { reconciliationRuns } from '../db/schema/index.ts';
import type { Db } from './sql.ts';

export interface RunClose {
  institutes: string[];
  counts: Record<string, number>;
  repairs: Record<string, unknown>;
  error: string | null;
  linkCheckCursor: number | null;
}

/** A pass ends: its counts, repairs and error. Returns when it finished (the database's clock). */
export async function closeRun(db: Db, id: number, close: RunClose): Promise<Date> {
  const [row] = await db
    .update(reconciliationRuns)
    .set({ ...close, finishedAt: sql`clock_timestamp()` })
    .where(eq(reconciliationRuns.id, id))
    .returning({ finishedAt: reconciliationRuns.finishedAt });
  return row?.finishedAt ?? new Date();
}
