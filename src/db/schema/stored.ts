// The shapes the jsonb columns hold. They are data, written by one version and read by the next, so
// they live beside the tables (the lowest layer) and every other module imports them from here
// through src/mapping.

import type { ClassValues } from './class-fields.ts';

/**
 * The batch's values as they now stand (`batch_classes.event`): its batch-created event with every
 * accepted update merged in (src/intake/changes.ts). Its class fields are declared in class-fields.ts.
 */
export interface StoredEvent extends ClassValues {
  batchId: string;
  instituteId: string;
}

/** How a listed name matched ours (see src/sync/matching.ts). */
export type NameMatch = 'same' | 'cut' | 'similar';

/** The three lists of an institute listing. */
export type ListName = 'classes' | 'pendingClasses' | 'hiddenClasses';

/** A listed class that could be a batch's: how its name matched, and where it is listed. */
export interface Candidate {
  _id: string | null;
  name: string;
  list: ListName;
  match: NameMatch;
}

export interface ReviewEvidence {
  className: string;
  /** Every candidate still in play, with how its name matched. */
  matches: Candidate[];
  /** Candidate ids already stored for other batches (never ours). */
  mappedElsewhere: string[];
  /** Other batches of the institute that may have created a class and whose names match the candidate. */
  otherClaimants?: string[];
}

/** Why an operator must look at a `needs_review` batch (`batch_classes.review`). */
export interface Review {
  reason: string;
  evidence: ReviewEvidence;
}

/** Small structured context of an audit event (`batch_events.detail`). */
export type EventDetail = Record<string, unknown>;
