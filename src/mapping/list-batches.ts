import { type SQL, and, asc, eq, gt, inArray } from 'drizzle-orm';
import { batchClasses } from '../db/schema/index.ts';
import type { Db } from './sql.ts';
import type { BatchState, MappingRow } from './types.ts';

export interface BatchFilter {
  state?: BatchState | undefined;
  instituteId?: string | undefined;
  /** Only these institutes (an API client's scope); an empty list matches nothing. */
  instituteIds?: readonly string[] | undefined;
  batchIds?: readonly string[] | undefined;
}

/**
 * The one paginator: rows in id order after `afterId`, at most `limit`, and the id to continue
 * after (null on the last page). One extra row tells whether another page exists, without count(*).
 * Stable under concurrent inserts: the id is the row's serial.
 */
export async function listBatches(
  db: Db,
  filter: BatchFilter,
  page: { limit: number; afterId?: number | undefined },
): Promise<{ rows: MappingRow[]; nextAfterId: number | null }> {
  const where: SQL[] = [];
  if (filter.state) where.push(eq(batchClasses.state, filter.state));
  if (filter.instituteId) where.push(eq(batchClasses.instituteId, filter.instituteId));
  if (filter.instituteIds) where.push(inArray(batchClasses.instituteId, [...filter.instituteIds]));
  if (filter.batchIds) where.push(inArray(batchClasses.batchId, [...filter.batchIds]));
  if (page.afterId !== undefined) where.push(gt(batchClasses.id, page.afterId));
  const rows = await db
    .select()
    .from(batchClasses)
    .where(and(...where))
    .orderBy(asc(batchClasses.id))
    .limit(page.limit + 1);
  const shown = rows.slice(0, page.limit);
  const last = shown[shown.length - 1];
  return { rows: shown, nextAfterId: rows.length > page.limit && last ? last.id : null };
}
