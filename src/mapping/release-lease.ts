import { type SQL, sql } from 'drizzle-orm';
import { type FencedStatement, fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import { LeaseLostError } from './errors.ts';
import type { AuditEvent, Lease } from './types.ts';
import { type Unstored, storeLinkStep, unstoredValues } from './unstored.ts';

/** How a run that stops early leaves its batch. */
export type RunEnd =
  /** Nothing to record: it waits (a refused key, a settle delay, a lost lease). */
  | { as: 'unchanged' }
  /** The attempt failed and another will follow: the error is kept for operators. */
  | { as: 'attempt_failed'; error: string; errorKind: string }
  /** A permanent failure: state `failed` (terminal; `classroom-sync retry` resumes it). */
  | { as: 'failed'; error: string; errorKind: string };

const KEEP_ERROR = sql`last_error = ${value('error')}, last_error_kind = ${value('errorKind')}`;

/**
 * A run that leaves a batch in `creating` has no add-class in flight any more: the first run to
 * leave after sending one stamps when (a run that only read the listing keeps the stamp it found).
 */
const CREATE_ENDED = sql`create_ended_at = case when b.state = 'creating' then coalesce(b.create_ended_at, now()) else b.create_ended_at end`;

/** Each way to end, with and without an unstored link step to store on the way out. */
function releases(as: RunEnd['as']): { plain: FencedStatement; storingLink: FencedStatement } {
  const change: SQL | undefined = { unchanged: undefined, attempt_failed: KEEP_ERROR, failed: sql`state = 'failed', failed_at = now(), ${KEEP_ERROR}` }[as];
  const set = change ? sql`${CREATE_ENDED}, ${change}` : CREATE_ENDED;
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
  const values = { ...(end.as === 'unchanged' ? {} : { error: end.error, errorKind: end.errorKind }), ...link };
  try {
    return await fencedWrite(db, lease, statement, { events, values });
  } catch (error) {
    if (error instanceof LeaseLostError) return undefined;
    throw error;
  }
}
