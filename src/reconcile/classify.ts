// Puts every mapping of one institute, and every listed class no mapping explains, into exactly one
// category. Pure: the same inputs give the same findings, so it is unit-tested without any I/O.
// Sized for 100k mappings: one pass, no allocation per in-sync batch beyond one small entry.
import type { InstituteListing } from '../classroom/schemas.ts';
import { DEFAULT_MIN_CUT, type NameRules } from '../sync/matching.ts';
import { type Candidate, decideResolution } from '../sync/resolve.ts';
import { driftDetail, driftedName, visibleAfterCancel } from './changes.ts';
import { type Listed, ListingIndex, type NameHit, type NameIndex, SAME, STRONG } from './listing.ts';
import type { Mapping } from './mappings.ts';
import { type Category, type Finding, type Unclassified, type Unresolved, emptyFindings } from './types.ts';

/** A mapped batch whose class is listed and consistent; turned into a Finding only when reported. */
export interface InSync {
  m: Mapping;
  listed: Listed;
  byName: boolean;
}

export interface Classification {
  instituteId: string;
  /** Every category but in_sync, as findings. */
  findings: Record<Category, Finding[]>;
  inSync: InSync[];
  unresolved: Unresolved[];
  unclassified: Unclassified;
  remoteClasses: number;
  itemsWithoutId: number;
}

export interface ClassifyInput {
  instituteId: string;
  mappings: readonly Mapping[];
  listing: InstituteListing;
  /** Row ids of stale rows that have no live job (see `withoutLiveJob`). */
  noLiveJob: ReadonlySet<number>;
  /** The name-matching rule of the sync (CLASSROOM_NAME_MIN_CUT). */
  rules?: NameRules;
}

export function classify(input: ClassifyInput): Classification {
  const rules = input.rules ?? { minCut: DEFAULT_MIN_CUT };
  const index = new ListingIndex(input.listing, rules);
  const out: Classification = {
    instituteId: input.instituteId,
    findings: emptyFindings(),
    inSync: [],
    unresolved: [],
    unclassified: { inFlight: 0, tooRecent: 0, unresolvedReview: 0, failedWithoutClass: 0, cancelledWithoutClass: 0, abandonedInDoubt: 0 },
    remoteClasses: index.all.length,
    itemsWithoutId: index.itemsWithoutId,
  };
  const { mappings } = input;
  const mappedIds = new Set<string>();
  for (const m of mappings) if (m.classId) mappedIds.add(m.classId);

  // Presence first, so every id-less item a mapping can claim by name is claimed before candidates are counted.
  const found: (Listed | undefined)[] = new Array(mappings.length);
  const byName = new Set<number>();
  mappings.forEach((m, i) => {
    if (!m.classId) return;
    found[i] = index.byId.get(m.classId);
    if (found[i]) return;
    found[i] = index.claimByName(m.className, m.remoteName);
    if (found[i] !== undefined) byName.add(i);
  });
  const unaccounted = index.unaccounted(mappedIds);
  const explained = new Set<Listed>();
  const claimants = mappings.filter(mayHaveCreated);
  const ctx: Context = { noLiveJob: input.noLiveJob, explained, claimants, rules };

  mappings.forEach((m, i) => {
    if (m.classId) classifyMapped(out, m, found[i], byName.has(i), duplicatesOf(unaccounted.index, m), ctx);
    else classifyUnmapped(out, m, unaccounted.index.candidates(m.className), ctx);
  });

  for (const listed of unaccounted.items) {
    if (explained.has(listed)) continue;
    out.findings.orphan_remote.push({
      ...base(input.instituteId, null, listed),
      category: 'orphan_remote',
      className: listed.item.name,
      detail: listed.item._id ? 'no batch maps to this class' : 'listed without _id; no batch of this name accounts for it',
    });
  }
  return out;
}

/**
 * Unmapped classes that look like a mapped batch's own: named exactly as the remote kept its name
 * when we know that name, else the name we sent or a cut of it.
 */
function duplicatesOf(index: NameIndex, m: Mapping): Listed[] {
  const hits = m.remoteName ? index.candidates(m.remoteName, SAME) : index.candidates(m.className, STRONG);
  return hits.map((h) => h.listed);
}

/** Unmapped batches that sent an add-class: any of them may have made a listed class. */
const mayHaveCreated = (m: Mapping): boolean => !m.classId && (m.state === 'creating' || m.state === 'needs_review' || m.sentCreate === true);

interface Context {
  noLiveJob: ReadonlySet<number>;
  explained: Set<Listed>;
  claimants: readonly Mapping[];
  rules: NameRules;
}

function classifyMapped(out: Classification, m: Mapping, listed: Listed | undefined, byName: boolean, others: readonly Listed[], ctx: Context): void {
  const finding = (category: Category, detail: string): Finding => ({
    ...base(out.instituteId, m, listed),
    category,
    matchedBy: listed ? (byName ? 'name' : 'id') : null,
    detail,
  });
  if (!listed) {
    if (m.recent) out.unclassified.tooRecent += 1;
    else out.findings.missing_remote.push(finding('missing_remote', 'the stored class id is in no list of the listing'));
    return;
  }
  const drifted = driftedName(m, listed, byName, ctx.rules);
  if (drifted !== undefined) {
    out.findings.name_drift.push({ ...finding('name_drift', driftDetail(m, listed, drifted)), listedName: drifted, revision: m.revision });
  } else if (listed.list === 'hiddenClasses') {
    // A cancelled batch's class is archived on purpose.
    if (m.state === 'cancelled') out.inSync.push({ m, listed, byName });
    else out.findings.hidden_remote.push(finding('hidden_remote', 'the class is archived/hidden on the remote'));
  } else if (others.length > 0) {
    for (const o of others) ctx.explained.add(o);
    out.findings.duplicate_suspect.push({
      ...finding('duplicate_suspect', `${others.length + 1} listed classes match this batch`),
      candidates: [m.classId, ...others.map(idOf)],
    });
  } else if (m.state === 'synced' && !m.hasLink) {
    out.findings.link_missing.push(finding('link_missing', 'synced but no join link is stored'));
  } else if (m.stale && ctx.noLiveJob.has(m.id)) {
    out.findings.stuck.push(finding('stuck', `${m.state} with no live job`));
  } else if (visibleAfterCancel(m, listed)) {
    out.findings.cancelled_visible.push({
      ...finding('cancelled_visible', 'cancelled, but its class is listed under classes (not archived)'),
      revision: m.revision,
    });
  } else {
    // Present and consistent; a mapped batch still mid-sync (with a live job) counts here too.
    out.inSync.push({ m, listed, byName });
  }
}

function classifyUnmapped(out: Classification, m: Mapping, hits: readonly NameHit[], ctx: Context): void {
  const finding = (category: Category, detail: string): Finding => ({ ...base(out.instituteId, m, undefined), category, detail });
  // Cancelled before it had a class: nothing on the remote is its, and nothing will be.
  if (m.state === 'cancelled') {
    out.unclassified.cancelledWithoutClass += 1;
    return;
  }
  if (m.state === 'abandoned') {
    abandonedInDoubt(out, m, hits, ctx);
    return;
  }
  const candidates = hits.map((h) => h.listed);
  if (candidates.length > 1) {
    for (const c of candidates) ctx.explained.add(c);
    out.findings.duplicate_suspect.push({
      ...finding('duplicate_suspect', `${candidates.length} unmapped listed classes are named like this ${m.state} batch`),
      candidates: candidates.map(idOf),
    });
    return;
  }
  if (m.state === 'needs_review') {
    settleReview(out, m, hits, ctx);
    return;
  }
  const only = candidates[0];
  // A `creating` batch's single candidate is what its own sync run will adopt: not an orphan.
  if (only && m.state === 'creating') ctx.explained.add(only);
  if (m.state === 'failed') out.unclassified.failedWithoutClass += 1;
  else if (m.stale && ctx.noLiveJob.has(m.id)) out.findings.stuck.push(finding('stuck', `${m.state} with no live job`));
  else out.unclassified.inFlight += 1;
}

/**
 * Abandoned while its add-class's outcome was unknown (only such abandoned batches are read): a class
 * of it may exist, so it stays reported until one is found (its candidates are then not orphans) or
 * an operator confirms there is none. Nothing is repaired: abandoned batches are the operator's.
 */
function abandonedInDoubt(out: Classification, m: Mapping, hits: readonly NameHit[], ctx: Context): void {
  for (const hit of hits) ctx.explained.add(hit.listed);
  const found = hits.map((h) => `${h.listed.item._id ?? '(no _id)'} "${h.listed.item.name}"`).join(', ');
  const detail =
    hits.length > 0
      ? `abandoned while its add-class's outcome was unknown; listed class(es) ${found} may be its: \`abandon --undo\` then \`retry\` settles it from the listing`
      : "abandoned while its add-class's outcome was unknown, so a class of it may exist: none is listed yet; `abandon --confirm-no-class` once you have checked there is none";
  out.unclassified.abandonedInDoubt += 1;
  out.unresolved.push({ ...base(out.instituteId, m, hits[0]?.listed), detail });
}

/** A needs_review batch with at most one candidate: the sync's own rule decides whether to adopt it. */
function settleReview(out: Classification, m: Mapping, hits: readonly NameHit[], ctx: Context): void {
  const hit = hits[0];
  if (!hit) {
    out.unclassified.unresolvedReview += 1;
    out.unresolved.push({
      ...base(out.instituteId, m, undefined),
      detail: 'no listed class of this name: the add-class never took effect; `classroom-sync retry` is safe',
    });
    return;
  }
  ctx.explained.add(hit.listed);
  const candidate: Candidate = { _id: hit.listed.item._id ?? null, name: hit.listed.item.name, list: hit.listed.list, match: hit.match };
  const otherClaimants = ctx.claimants.filter((c) => c.id !== m.id).map((c) => c.className);
  const resolution = decideResolution(m.className, [candidate], { mappedElsewhere: new Set(), otherClaimants }, ctx.rules);
  const finding = { ...base(out.instituteId, m, hit.listed), matchedBy: 'name' as const };
  if (resolution.decision === 'adopt') {
    out.findings.needs_review_resolved.push({
      ...finding,
      category: 'needs_review_resolved',
      classId: resolution.classId,
      detail: 'exactly one unmapped class of this name: adopted',
    });
    return;
  }
  out.unclassified.unresolvedReview += 1;
  out.unresolved.push({ ...finding, detail: resolution.decision === 'review' ? resolution.reason : 'no candidate' });
}

export function base(instituteId: string, m: Mapping | null, listed: Listed | undefined): Omit<Finding, 'category'> {
  return {
    instituteId,
    batchId: m?.batchId ?? null,
    classId: m?.classId ?? (listed ? idOf(listed) : null),
    className: m?.className ?? listed?.item.name ?? '',
    state: m?.state ?? null,
    list: listed?.list ?? null,
    matchedBy: null,
    rowId: m?.id ?? null,
  };
}

/** The report's form of an in-sync entry (only built for the capped list and link checks). */
export function inSyncFinding(instituteId: string, entry: InSync): Finding {
  return { ...base(instituteId, entry.m, entry.listed), category: 'in_sync', matchedBy: entry.byName ? 'name' : 'id' };
}

const idOf = (listed: Listed): string | null => listed.item._id ?? null;
