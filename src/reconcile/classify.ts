// Puts every mapping of one institute, and every listed class no mapping explains, into exactly one
// category. Pure: the same inputs give the same findings, so it is unit-tested without any I/O.
// Sized for 100k mappings: one pass, no allocation per in-sync batch beyond one small entry.
import type { InstituteListing } from '../classroom/schemas.ts';
import { decideResolution } from '../sync/resolve.ts';
import { type Listed, ListingIndex, nameKey } from './listing.ts';
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
}

export function classify(input: ClassifyInput): Classification {
  const index = new ListingIndex(input.listing);
  const out: Classification = {
    instituteId: input.instituteId,
    findings: emptyFindings(),
    inSync: [],
    unresolved: [],
    unclassified: { inFlight: 0, tooRecent: 0, unresolvedReview: 0, failedWithoutClass: 0 },
    remoteClasses: index.all.length,
    itemsWithoutId: index.itemsWithoutId,
  };
  const { mappings } = input;
  const mappedIds = new Set<string>();
  for (const m of mappings) if (m.classId) mappedIds.add(m.classId);

  // Presence first, so every id-less item a mapping can claim by name is claimed before candidates are counted.
  const found: (Listed | undefined)[] = new Array(mappings.length);
  const byName: boolean[] = new Array(mappings.length).fill(false);
  mappings.forEach((m, i) => {
    if (!m.classId) return;
    found[i] = index.byId.get(m.classId);
    if (found[i]) return;
    found[i] = index.claimByName(m.className);
    byName[i] = found[i] !== undefined;
  });
  const unaccounted = index.unaccountedByName(mappedIds);
  const explained = new Set<Listed>();
  const wanted = new Map<Listed, Mapping[]>();

  mappings.forEach((m, i) => {
    const others = unaccounted.get(nameKey(m.className)) ?? [];
    if (m.classId) classifyMapped(out, m, found[i], byName[i]!, others, input.noLiveJob, explained);
    else classifyUnmapped(out, m, others, input.noLiveJob, explained, wanted);
  });
  settleAdoptions(out, wanted, explained);

  for (const bucket of unaccounted.values()) {
    for (const listed of bucket) {
      if (explained.has(listed)) continue;
      out.findings.orphan_remote.push({
        ...base(input.instituteId, null, listed),
        category: 'orphan_remote',
        className: listed.item.name,
        detail: listed.item._id ? 'no batch maps to this class' : 'listed without _id; no batch of this name accounts for it',
      });
    }
  }
  return out;
}

function classifyMapped(
  out: Classification,
  m: Mapping,
  listed: Listed | undefined,
  byName: boolean,
  others: readonly Listed[],
  noLiveJob: ReadonlySet<number>,
  explained: Set<Listed>,
): void {
  const finding = (category: Category, detail: string): Finding => ({
    ...base(out.instituteId, m, listed),
    category,
    matchedBy: listed ? (byName ? 'name' : 'id') : null,
    detail,
  });
  if (!listed) {
    if (m.recent) out.unclassified.tooRecent += 1;
    else out.findings.missing_remote.push(finding('missing_remote', 'the stored class id is in no list of the listing'));
  } else if (listed.list === 'hiddenClasses') {
    out.findings.hidden_remote.push(finding('hidden_remote', 'the class is archived/hidden on the remote'));
  } else if (others.length > 0) {
    for (const o of others) explained.add(o);
    out.findings.duplicate_suspect.push({
      ...finding('duplicate_suspect', `${others.length + 1} listed classes match this batch`),
      candidates: [m.classId, ...others.map(idOf)],
    });
  } else if (m.state === 'synced' && !m.hasLink) {
    out.findings.link_missing.push(finding('link_missing', 'synced but no join link is stored'));
  } else if (m.stale && noLiveJob.has(m.id)) {
    out.findings.stuck.push(finding('stuck', `${m.state} with no live job`));
  } else {
    // Present and consistent; a mapped batch still mid-sync (with a live job) counts here too.
    out.inSync.push({ m, listed, byName });
  }
}

function classifyUnmapped(
  out: Classification,
  m: Mapping,
  candidates: readonly Listed[],
  noLiveJob: ReadonlySet<number>,
  explained: Set<Listed>,
  wanted: Map<Listed, Mapping[]>,
): void {
  const finding = (category: Category, detail: string): Finding => ({ ...base(out.instituteId, m, undefined), category, detail });
  if (candidates.length > 1) {
    for (const c of candidates) explained.add(c);
    out.findings.duplicate_suspect.push({
      ...finding('duplicate_suspect', `${candidates.length} unmapped listed classes are named like this ${m.state} batch`),
      candidates: candidates.map(idOf),
    });
    return;
  }
  const only = candidates[0];
  if (m.state === 'needs_review') {
    if (only) {
      wanted.set(only, (wanted.get(only) ?? []).concat(m));
      return;
    }
    out.unclassified.unresolvedReview += 1;
    out.unresolved.push({ ...base(out.instituteId, m, undefined), detail: 'no listed class of this name: the add-class never took effect; `classroom-sync retry` is safe' });
    return;
  }
  // A `creating` batch's single candidate is what its own sync run will adopt: not an orphan.
  if (only && m.state === 'creating') explained.add(only);
  if (m.state === 'failed') out.unclassified.failedWithoutClass += 1;
  else if (m.stale && noLiveJob.has(m.id)) out.findings.stuck.push(finding('stuck', `${m.state} with no live job`));
  else out.unclassified.inFlight += 1;
}

/** Adopts a candidate only when exactly one needs_review batch wants it and its id is safe (sync's own rule). */
function settleAdoptions(out: Classification, wanted: Map<Listed, Mapping[]>, explained: Set<Listed>): void {
  for (const [listed, batches] of wanted) {
    explained.add(listed);
    for (const m of batches) {
      const resolution = decideResolution(m.className, [{ item: listed.item, list: listed.list }], new Set());
      const finding = { ...base(out.instituteId, m, listed), matchedBy: 'name' as const };
      if (batches.length === 1 && resolution.decision === 'adopt') {
        out.findings.needs_review_resolved.push({ ...finding, category: 'needs_review_resolved', classId: resolution.classId, detail: 'exactly one unmapped class of this name: adopted' });
        continue;
      }
      out.unclassified.unresolvedReview += 1;
      const detail = batches.length > 1 ? `${batches.length} needs_review batches share the only candidate` : resolution.decision === 'review' ? resolution.reason : 'no candidate';
      out.unresolved.push({ ...finding, detail });
    }
  }
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
