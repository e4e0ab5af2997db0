// After an add-class whose outcome is unknown, decide by reading the institute listing, never by
// posting again: one clear match is adopted, none means it is safe to create, anything else goes
// to an operator with the evidence.
import type { CallOptions, ClassroomClient } from '../classroom/client.ts';
import { isSafeId } from '../classroom/ids.ts';
import type { InstituteListing, ListItem } from '../classroom/schemas.ts';

export type Resolution =
  | { decision: 'adopt'; classId: string }
  | { decision: 'create' }
  | { decision: 'review'; reason: string; evidence: ReviewEvidence };

export interface ReviewEvidence {
  className: string;
  matches: { _id: string | null; name: string; list: ListName }[];
  mappedElsewhere: string[];
}

export type ListName = 'classes' | 'pendingClasses' | 'hiddenClasses';
const LISTS: ListName[] = ['classes', 'pendingClasses', 'hiddenClasses'];

export interface ResolveInput {
  instituteId: string;
  className: string;
  /** Class ids already stored for other batches: a same-named class of another batch is not ours. */
  mappedElsewhere: (classIds: string[]) => Promise<Set<string>>;
}

export function findByName(listing: InstituteListing, className: string): { item: ListItem; list: ListName }[] {
  const wanted = className.trim();
  return LISTS.flatMap((list) => listing[list].filter((item) => item.name.trim() === wanted).map((item) => ({ item, list })));
}

export async function resolveUnknownCreate(classroom: ClassroomClient, input: ResolveInput, options: CallOptions = {}): Promise<Resolution> {
  let matches = findByName(await classroom.listClasses(input.instituteId, { searchTerm: input.className }, options), input.className);
  if (matches.length === 0) {
    // "Nothing found" is what licenses a second POST, so it must not rest on how the remote
    // interprets searchTerm: confirm against the whole listing.
    matches = findByName(await classroom.listClasses(input.instituteId, {}, options), input.className);
  }
  const ids = matches.map((m) => m.item._id).filter((id): id is string => typeof id === 'string');
  return decideResolution(input.className, matches, await input.mappedElsewhere(ids));
}

/**
 * The decision itself, given the same-named listing matches and the ids among them that are stored
 * for other batches. Pure, so reconciliation applies exactly the rule a sync run applies.
 */
export function decideResolution(className: string, matches: { item: ListItem; list: ListName }[], mapped: ReadonlySet<string>): Resolution {
  const ours = matches.filter((m) => !(m.item._id && mapped.has(m.item._id)));
  const evidence: ReviewEvidence = {
    className,
    matches: ours.map((m) => ({ _id: m.item._id ?? null, name: m.item.name, list: m.list })),
    mappedElsewhere: [...mapped],
  };
  if (ours.length === 0) return { decision: 'create' };
  if (ours.length > 1) {
    return { decision: 'review', reason: `${ours.length} unmapped remote classes are named "${className}"; cannot tell which one this batch created`, evidence };
  }
  const only = ours[0]!.item;
  if (!only._id) {
    return { decision: 'review', reason: `a class named "${className}" exists but the listing gives no _id to adopt`, evidence };
  }
  if (!isSafeId(only._id)) {
    return { decision: 'review', reason: `a class named "${className}" exists but its _id is not a safe identifier`, evidence };
  }
  return { decision: 'adopt', classId: only._id };
}
