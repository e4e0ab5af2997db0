import { type SQL, sql } from 'drizzle-orm';
import { fencedWrite } from './fenced-write.ts';
import { type Unstored, unstoredAssignments } from './unstored.ts';
import type { DbOrTx, ProgressRow } from './sql.ts';
import { type AuditEvent, type Lease, LeaseLostError } from './types.ts';

/** How a run that stops early leaves its batch. */
export type RunEnd =
  /** Nothing to record: it waits (a refused key, a settle delay, a lost lease). */
  | { as: 'unchanged' }
  /** The attempt failed and another will follow: the error is kept for operators. */
  | { as: 'attempt_failed'; error: string; errorKind: string }
  /** A permanent failure: state `failed` (terminal; `classroom-sync retry` resumes it). */
  | { as: 'failed'; error: string; errorKind: string };

function assignments(end: RunEnd) {
  switch (end.as) {
    case 'unchanged':
      return undefined;
    case 'attempt_failed':
      return sql`last_error = ${end.error}, last_error_kind = ${end.errorKind}`;
    case 'failed':
      return sql`state = 'failed', failed_at = now(), last_error = ${end.error}, last_error_kind = ${end.errorKind}`;
  }
}

function withUnstored(end: RunEnd, set: SQL | undefined, unstored: Unstored): SQL | undefined {
  // A failed batch keeps `failed`; its stored link_enabled_at tells `retry` to resume after edit-class.
  const progress = unstoredAssignments(unstored, { keepState: end.as === 'failed' });
  if (!progress) return set;
  return set ? sql`${set}, ${progress}` : progress;
}

/** Ends this run's lease; undefined when another runner has already taken it (nothing written). */
export async function releaseLease(
  db: DbOrTx,
  lease: Lease,
  end: RunEnd,
  events: readonly AuditEvent[],
  unstored: Unstored = {},
): Promise<ProgressRow | undefined> {
  try {
    const set = withUnstored(end, assignments(end), unstored);
    const name = `release_${end.as}${unstored.linkEnabledAt ? '_link' : ''}`;
    return await fencedWrite(db, lease, { name, ...(set ? { set } : {}), lease: 'release', events });
  } catch (error) {
    if (error instanceof LeaseLostError) return undefined;
    throw error;
  }
}
