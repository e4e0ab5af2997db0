import { sql } from 'drizzle-orm';
import { fencedStatement, fencedWrite } from './fenced-write.ts';
import { type Db, type ProgressRow, value } from './sql.ts';
import type { AuditEvent, Lease, Review } from './types.ts';

const MARK_NEEDS_REVIEW = fencedStatement(
  'mark_needs_review',
  'release',
  sql`state = 'needs_review', review = ${value('review')}::jsonb, last_error = ${value('reason')}, last_error_kind = 'ambiguous_create'`,
);

/** An add-class of unknown outcome the listing cannot settle: `needs_review` with the evidence (terminal). */
export function markNeedsReview(db: Db, lease: Lease, review: Review, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, MARK_NEEDS_REVIEW, { events, values: { review: JSON.stringify(review), reason: review.reason } });
}
