// `classroom-sync status [BATCH_ID]`: counts by state, or one batch's mapping.
import { and, count, eq } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { BATCH_STATES, type BatchState, batchClasses } from '../db/schema/index.ts';
import { maskJoinLink } from '../logger.ts';

export async function countByState(db: Db): Promise<Record<BatchState, number>> {
  const rows = await db.select({ state: batchClasses.state, n: count() }).from(batchClasses).groupBy(batchClasses.state);
  const counts = Object.fromEntries(BATCH_STATES.map((s) => [s, 0])) as Record<BatchState, number>;
  for (const row of rows) counts[row.state] = Number(row.n);
  return counts;
}

export async function findBatch(db: Db, instituteId: string, batchId: string) {
  const [row] = await db
    .select()
    .from(batchClasses)
    .where(and(eq(batchClasses.instituteId, instituteId), eq(batchClasses.batchId, batchId)));
  return row;
}

export type BatchView = ReturnType<typeof viewOf>;

/** The public shape of a mapping (API, CLI). Lease internals stay inside. */
export function viewOf(row: typeof batchClasses.$inferSelect) {
  return {
    batchId: row.batchId,
    instituteId: row.instituteId,
    state: row.state,
    classId: row.classId,
    joinLink: row.joinLink,
    className: row.className,
    attempts: row.attempts,
    lastError: row.lastError,
    lastErrorKind: row.lastErrorKind,
    review: row.review,
    receivedAt: row.receivedAt,
    createSentAt: row.createSentAt,
    classCreatedAt: row.classCreatedAt,
    linkEnabledAt: row.linkEnabledAt,
    syncedAt: row.syncedAt,
    failedAt: row.failedAt,
    updatedAt: row.updatedAt,
  };
}

export function formatBatch(view: BatchView, showLink: boolean): string {
  const link = showLink ? view.joinLink : maskJoinLink(view.joinLink);
  const lines = [
    `batch       ${view.batchId} (institute ${view.instituteId})`,
    `state       ${view.state}`,
    `class id    ${view.classId ?? '-'}`,
    `join link   ${link ?? '-'}`,
    `class name  ${view.className}`,
    `attempts    ${view.attempts}`,
    `received    ${view.receivedAt.toISOString()}`,
    `synced      ${view.syncedAt?.toISOString() ?? '-'}`,
  ];
  if (view.lastError) lines.push(`last error  ${view.lastError}`);
  if (view.review) lines.push(`review      ${JSON.stringify(view.review)}`);
  return lines.join('\n');
}
