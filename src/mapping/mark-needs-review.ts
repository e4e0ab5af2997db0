import { sql } from 'drizzle-orm';
import { fencedWrite } from './fenced-write.ts';
import type { DbOrTx, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease, Review } from './types.ts';

/** An add-class of unknown outcome the listing cannot settle: `needs_review` with the evidence (terminal). */
export function markNeedsReview(db: DbOrTx, lease: Lease, review: Review, events: readonly AuditEvent[]): Promise<ProgressRow> {
  return fencedWrite(db, lease, {
    name: 'mark_needs_review',
    set: sql`state = 'needs_review', review = ${JSON.stringify(review)}::jsonb, last_error = ${review.reason}, last_error_kind = 'ambiguous_create'`,
    lease: 'release',
    events,
  });
}
