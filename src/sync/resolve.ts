// After an add-class whose outcome is unknown, decide by reading the institute listing, never by
// posting again. The decision is asymmetric because the two mistakes cost differently: a second
// class is a mess in the remote and two join links in circulation; a batch in needs_review is one
// operator's glance. So: create only when no listed class could plausibly be ours; adopt only a
// single strong candidate that no other batch could also claim; anything in between goes to review.
import type { ClassroomError } from '../classroom/errors.ts';
import { isSafeId } from '../classroom/ids.ts';
import type { InstituteListing } from '../classroom/schemas.ts';
import type { Candidate, ListName, NameMatch, ReviewEvidence } from '../mapping/index.ts';
import { SyncError } from './errors.ts';
import { type NameRules, isStrong, matchName } from './matching.ts';

export type { Candidate, ListName, ReviewEvidence };

export type Resolution =
  | { decision: 'adopt'; classId: string; remoteName: string }
  | { decision: 'create' }
  | { decision: 'review'; reason: string; evidence: ReviewEvidence };

export const LISTS: readonly ListName[] = ['classes', 'pendingClasses', 'hiddenClasses'];

/** What the database knows about the candidates: who already has them, who else may have made them. */
export interface ClaimsOnCandidates {
  /** Candidate ids stored for other batches. */
  mappedElsewhere: ReadonlySet<string>;
  /** Class names of the institute's other batches that sent an add-class and have no ClassID yet. */
  otherClaimants: readonly string[];
}

export interface ResolveInput {
  instituteId: string;
  className: string;
  rules: NameRules;
  claims: (candidateIds: string[]) => Promise<ClaimsOnCandidates>;
}

/** Every listed class, in any list, whose name could be a rewriting of `className`. */
export function findCandidates(listing: InstituteListing, className: string, rules: NameRules): Candidate[] {
  const found: Candidate[] = [];
  for (const list of LISTS) {
    for (const item of listing[list]) {
      const match = matchName(className, item.name, rules);
      if (match) found.push({ _id: item._id ?? null, name: item.name, list, match });
    }
  }
  return found;
}

/** The listing read, and what it decided; `create` still needs the listing shown fresh enough (src/sync/settle.ts). */
export interface ListingRead {
  resolution: Resolution;
  /** Every `_id` the listing holds, in any list. */
  listed: ReadonlySet<string>;
}

/**
 * The decision on a listing of the whole institute (perhaps shared by several batches:
 * src/sync/institute-listing.ts); `listed` is `listedIds(listing)`. The whole listing, not a
 * searchTerm query: a remote that shortened or re-cased the name would not find it by our spelling,
 * and "nothing found" is what licenses a second POST.
 */
export async function resolveFromListing(listing: InstituteListing, listed: ReadonlySet<string>, input: ResolveInput): Promise<ListingRead> {
  const candidates = findCandidates(listing, input.className, input.rules);
  if (candidates.length === 0) return { resolution: { decision: 'create' }, listed };
  const ids = candidates.map((c) => c._id).filter((id): id is string => typeof id === 'string');
  return { resolution: decideResolution(input.className, candidates, await input.claims(ids), input.rules), listed };
}

/** Every `_id` a listing holds, in any of its lists. */
export function listedIds(listing: InstituteListing): Set<string> {
  const ids = new Set<string>();
  for (const list of LISTS) for (const item of listing[list]) if (item._id) ids.add(item._id);
  return ids;
}

/**
 * The decision itself. Pure, so reconciliation applies exactly the rule a sync run applies.
 * `candidates` come from `findCandidates`; `claims` from the mapping table.
 */
export function decideResolution(className: string, candidates: readonly Candidate[], claims: ClaimsOnCandidates, rules: NameRules): Resolution {
  const ours = candidates.filter((c) => !(c._id && claims.mappedElsewhere.has(c._id)));
  const [only] = ours;
  if (only === undefined) return { decision: 'create' };
  const evidence: ReviewEvidence = { className, matches: ours, mappedElsewhere: [...claims.mappedElsewhere] };
  const review = (reason: string): Resolution => ({ decision: 'review', reason, evidence });
  if (ours.length > 1) {
    return review(
      `${ours.length} unmapped remote classes are named "${className}" or a rewriting of it (${describe(ours)}); cannot tell which one this batch created`,
    );
  }
  if (!isStrong(only.match)) {
    return review(`a remote class named "${only.name}" resembles "${className}" but is not a rewriting the remote is known to make; adopt or create by hand`);
  }
  if (!only._id) return review(`a class named "${only.name}" exists but the listing gives no _id to adopt`);
  if (!isSafeId(only._id)) return review(`a class named "${only.name}" exists but its _id is not a safe identifier`);
  const rivals = claims.otherClaimants.filter((name) => matchName(name, only.name, rules) !== undefined);
  if (rivals.length > 0) {
    evidence.otherClaimants = rivals;
    return review(
      `the only candidate "${only.name}" (${only._id}) could also be the class of ${rivals.length} other batch(es) whose add-class outcome is open`,
    );
  }
  return { decision: 'adopt', classId: only._id, remoteName: only.name };
}

function describe(candidates: readonly Candidate[]): string {
  const counts = new Map<NameMatch, number>();
  for (const c of candidates) counts.set(c.match, (counts.get(c.match) ?? 0) + 1);
  return [...counts].map(([match, n]) => `${n} ${match}`).join(', ');
}

/**
 * The listing was refused while it is what settles an add-class of unknown outcome: it is asked again
 * (an attempt), never read as "nothing was made"; once attempts run out, `needs_review` (src/sync/run-end.ts).
 */
export function listingRefused(error: ClassroomError): SyncError {
  const message = `the institute listing that settles an add-class of unknown outcome was refused (${error.message}); a class may exist, so no add-class is sent: reading it again`;
  return new SyncError('listing_refused', error.reason, message, { cause: error });
}
