// The one definition of doubt, which every path that moves a batch asks (docs/reliability.md, "The
// doubt rule"). A batch *may have a class* when add-class was sent (`create_sent_at`), no class id
// is known, and nothing has proven that none was made: `forget-create.ts` clears `create_sent_at`
// only on such proof (the call was refused or never left, or the listing settled it), and an
// operator's `abandon --confirm-no-class` only after checking the remote. In doubt, a batch is `creating`
// (a run settles it from the listing), `needs_review` (an operator settles it) or `abandoned` (and
// reconciliation keeps reporting it): never `pending`, `failed` or `cancelled`.
import { type SQL, sql } from 'drizzle-orm';
import type { BatchState, MappingRow } from './types.ts';

type Facts = Pick<MappingRow, 'classId' | 'createSentAt'>;
type FailureFacts = Facts & Pick<MappingRow, 'cancelledAt'>;

/** The batch may have a class on the remote that we do not know of. */
export function mayHaveClass(row: Facts): boolean {
  return row.classId === null && row.createSentAt !== null;
}

/** No add-class of this batch can have made a class: what the next add-class sends may still change. */
export function nothingSent(row: Facts): boolean {
  return row.classId === null && row.createSentAt === null;
}

/** `mayHaveClass` of the row aliased `b`, in SQL. */
export const MAY_HAVE_CLASS = sql`(b.class_id is null and b.create_sent_at is not null)`;

/** Cancelled by the integrator, and no add-class can have made a class: nothing is left to do. */
export const CANCELLED_UNSENT = sql`(b.cancelled_at is not null and b.class_id is null and b.create_sent_at is null)`;

/**
 * Where a failure that will not be retried (a permanent one, or the last attempt's) leaves a batch:
 * `needs_review` when it may have a class (nothing else would look again), `cancelled` when the
 * integrator cancelled it and none can exist (the failure no longer matters), else `failed`.
 */
export function failedState(row: FailureFacts): BatchState {
  if (mayHaveClass(row)) return 'needs_review';
  return row.cancelledAt !== null && nothingSent(row) ? 'cancelled' : 'failed';
}

/** `failedState` of the row aliased `b` as assignments, with the `review` (SQL jsonb) a `needs_review` one carries. */
export function failureSet(review: SQL): SQL {
  return sql`state = case when ${MAY_HAVE_CLASS} then 'needs_review'::batch_state when ${CANCELLED_UNSENT} then 'cancelled'::batch_state else 'failed'::batch_state end,
    failed_at = case when ${MAY_HAVE_CLASS} or ${CANCELLED_UNSENT} then b.failed_at else now() end,
    review = case when ${MAY_HAVE_CLASS} then ${review} else b.review end,
    applied_revision = case when ${CANCELLED_UNSENT} then b.revision else b.applied_revision end`;
}

/**
 * Where a batch an operator lets go of (retry) resumes, for the row aliased `b`: after the last
 * step known done, and never before an add-class that may have made a class.
 */
export const RESUME_STATE = sql`(case
  when b.class_id is not null and b.link_enabled_at is not null then 'link_enabled'
  when b.class_id is not null then 'created'
  when ${MAY_HAVE_CLASS} then 'creating'
  else 'pending' end)::batch_state`;

/** The review a batch in doubt carries when it comes to rest for an operator without a listing's evidence. */
export function doubtReview(className: string, why: string): { reason: string; evidence: { className: string; matches: []; mappedElsewhere: [] } } {
  return {
    reason: `${why}; an add-class of this batch was sent and its outcome is unknown, so a class may exist: check the institute's listing, then \`classroom-sync retry\` (it settles from the listing) or abandon it`,
    evidence: { className, matches: [], mappedElsewhere: [] },
  };
}

/** `doubtReview` as SQL jsonb, for a statement over the row aliased `b` (its class name filled in). */
export const doubtReviewOf = (why: string): SQL =>
  sql`jsonb_set(${JSON.stringify(doubtReview('', why))}::jsonb, '{evidence,className}', to_jsonb(b.class_name))`;
