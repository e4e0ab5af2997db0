import { type SQL, sql } from 'drizzle-orm';
import { type FencedStatement, fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, interval, value } from './sql.ts';
import { LeaseLostError } from './errors.ts';
import { failureSet } from './doubt.ts';
import type { AuditEvent, Lease, Review } from './types.ts';
import { type Unstored, storeLinkStep, unstoredValues } from './unstored.ts';

/** How a run that stops early leaves its batch. */
export type RunEnd =
  /** Nothing to record: it waits (a refused key, a settle delay, a lost lease). */
  | { as: 'unchanged' }
  /** The attempt failed and another will follow: the error is kept for operators. */
  | { as: 'attempt_failed'; error: string; errorKind: string }
  /**
   * A permanent failure (or the last attempt's): state `failed` (terminal; `classroom-sync retry`
   * resumes it), or `needs_review` with `review` when the batch may have a class (src/mapping/doubt.ts).
   */
  | { as: 'failed'; error: string; errorKind: string; review: Review };

const KEEP_ERROR = sql`last_error = ${value('error')}, last_error_kind = ${value('errorKind')}`;

/** A batch that may have a class is never `failed`: nothing would look again. An operator must (src/mapping/doubt.ts). */
const FAIL = sql`${failureSet(sql`${value('review')}::jsonb`)}, ${KEEP_ERROR}`;

/**
 * A run that leaves a batch in `creating` has no add-class in flight any more: the first run to
 * leave after sending one stamps when (a run that only read the listing keeps the stamp it found).
 */
const CREATE_ENDED = sql`create_ended_at = case when b.state = 'creating' then coalesce(b.create_ended_at, now()) else b.create_ended_at end`;

/** An edit-class of the run whose outcome is unknown may take effect late: the next edit waits for it (change-steps.ts). */
const CALLS_LANDED_BY = sql`calls_settled_at = case when ${value('editLandsWithinMs')}::int is null then b.calls_settled_at
  else greatest(b.calls_settled_at, now() + ${interval(value('editLandsWithinMs'))}) end`;

/** Each way to end, with and without an unstored link step to store on the way out. */
function releases(as: RunEnd['as']): { plain: FencedStatement; storingLink: FencedStatement } {
  const change: SQL | undefined = { unchanged: undefined, attempt_failed: KEEP_ERROR, failed: FAIL }[as];
  const set = change ? sql`${CREATE_ENDED}, ${CALLS_LANDED_BY}, ${change}` : sql`${CREATE_ENDED}, ${CALLS_LANDED_BY}`;
  const link = storeLinkStep({ keepState: as === 'failed' });
  return {
    plain: fencedStatement(`release_${as}`, 'release', set),
    storingLink: fencedStatement(`release_${as}_link`, 'release', sql`${set}, ${link}`),
  };
}

const RELEASES = { unchanged: releases('unchanged'), attempt_failed: releases('attempt_failed'), failed: releases('failed') };

/** Ends this run's lease; undefined when another runner has already taken it (nothing written). */
export async function releaseLease(
  db: Db,
  lease: Lease,
  end: RunEnd,
  events: readonly AuditEvent[],
  unstored: Unstored = {},
): Promise<ProgressRow | undefined> {
  const link = unstoredValues(unstored);
  const statement = link ? RELEASES[end.as].storingLink : RELEASES[end.as].plain;
  const values = {
    ...(end.as === 'unchanged' ? {} : { error: end.error, errorKind: end.errorKind }),
    ...(end.as === 'failed' ? { review: JSON.stringify(end.review) } : {}),
    editLandsWithinMs: unstored.editLandsWithinMs ?? null,
    ...link,
  };
  try {
    return await fencedWrite(db, lease, statement, { events, values });
  } catch (error) {
    if (error instanceof LeaseLostError) return undefined;
    throw error;
  }
}
