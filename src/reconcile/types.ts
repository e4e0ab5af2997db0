// What a reconciliation pass reports. One pass reads each institute's listing once and compares it
// with the mappings in batch_classes.
//
// Glossary of a pass (the domain's: src/db/schema/index.ts)
//   finding     one batch (or one remote class, for orphans) placed in exactly one category
//   candidate   a remote class that could be a batch's class: same class name, mapped to no other batch
//   repair      a change that cannot create a class or delete one: re-enqueue, re-run the link steps,
//               adopt a single clear candidate, ask a sync run for an edit-class (rename back, archive
//               again; never sent by the pass itself). Everything else is only reported.
import type { BatchState } from '../mapping/index.ts';
import type { ListName } from '../sync/resolve.ts';

/** get-class calls a pass spends on the join-link rotation, unless told otherwise (`--link-checks`). */
export const DEFAULT_LINK_CHECKS = 20;

/**
 * in_sync               mapped, and the class is listed (classes or pendingClasses; a cancelled batch's
 *                       archived class under hiddenClasses too)
 * missing_remote        mapped, but the class is in no list
 * hidden_remote         mapped, but the class is archived/hidden (hiddenClasses)
 * orphan_remote         a listed class that no batch maps to (and no batch claims as a candidate)
 * stuck                 not terminal, no live job, untouched for longer than the threshold → re-enqueued
 * link_missing          synced without a join link (or the remote's link is blank/changed) → link steps re-run
 * duplicate_suspect     more than one remote class could be this batch's class
 * needs_review_resolved an ambiguous create that now has exactly one safe candidate → adopted
 * name_drift            synced, no change pending, and the class is listed (classes or hiddenClasses)
 *                       under a name that is neither its class name (same or cut) nor the name the
 *                       remote kept → an edit back to the class name is requested (RECONCILE_REPAIR_NAMES)
 * cancelled_visible     cancelled, and its class is listed under `classes` (not archived) → archiving it
 *                       again is requested (CLASSROOM_ARCHIVE_ON_CANCEL)
 */
export const CATEGORIES = [
  'in_sync',
  'missing_remote',
  'hidden_remote',
  'orphan_remote',
  'stuck',
  'link_missing',
  'duplicate_suspect',
  'needs_review_resolved',
  'name_drift',
  'cancelled_visible',
] as const;
export type Category = (typeof CATEGORIES)[number];

export type RepairAction = 'requeue' | 'rerun_link_steps' | 'adopt' | 'request_edit';

/** The settings that decide whether two categories are repaired or only reported. */
export interface RepairSettings {
  /** RECONCILE_REPAIR_NAMES: name_drift is repaired (off by default: a rename on the remote may be deliberate). */
  repairNames: boolean;
  /** CLASSROOM_ARCHIVE_ON_CANCEL: cancelled_visible is repaired. */
  archiveOnCancel: boolean;
}

export const DEFAULT_REPAIR_SETTINGS: RepairSettings = { repairNames: false, archiveOnCancel: true };

/** Categories whose findings a non-dry run changes under `settings`; the rest are reported only. */
export function repairActions(settings: RepairSettings): Readonly<Partial<Record<Category, RepairAction>>> {
  return {
    stuck: 'requeue',
    link_missing: 'rerun_link_steps',
    needs_review_resolved: 'adopt',
    ...(settings.repairNames ? { name_drift: 'request_edit' as const } : {}),
    ...(settings.archiveOnCancel ? { cancelled_visible: 'request_edit' as const } : {}),
  };
}

/** What a non-dry run changes with the default settings (see `repairActions` for others). */
export const REPAIRED = repairActions(DEFAULT_REPAIR_SETTINGS);

export interface Finding {
  category: Category;
  instituteId: string;
  /** null for orphan_remote. */
  batchId: string | null;
  /** null when the listing gave no `_id` (or, for an unmapped batch, none is known). */
  classId: string | null;
  className: string;
  state: BatchState | null;
  /** Where the class was listed; null when it is in no list. */
  list: ListName | null;
  /** How the class was found in the listing: by its id, or only by name (listing without `_id`). */
  matchedBy: 'id' | 'name' | null;
  /** duplicate_suspect: every class that could be this batch's (null = listed without `_id`). */
  candidates?: (string | null)[];
  detail?: string;
  /** name_drift: the name the listing shows for the class. */
  listedName?: string;
  /** batch_classes.id; internal (repairs, link-check rotation). */
  rowId: number | null;
  /** name_drift, cancelled_visible: the row's revision as read; internal (an edit request is guarded by it). */
  revision?: number;
}

/** A needs_review batch (or one abandoned while a class of it may exist) that stays with the operator; `detail` says why. */
export type Unresolved = Omit<Finding, 'category'>;

/** Batches that are in no category because nothing is wrong yet, or an operator already owns them. */
export interface Unclassified {
  /** Not terminal, and a job is live or the row changed recently. */
  inFlight: number;
  /** Mapped, absent from the listing, but created so recently that the listing may not show it yet. */
  tooRecent: number;
  /** needs_review with no single safe candidate: still the operator's (see `unresolved`). */
  unresolvedReview: number;
  /** failed before any class id was stored. */
  failedWithoutClass: number;
  /** cancelled before any class id was stored: nothing on the remote to look at. */
  cancelledWithoutClass: number;
  /** abandoned while a class of it may exist (its add-class's outcome unknown): reported in `unresolved` until found or ruled out. */
  abandonedInDoubt: number;
}

export interface RepairSummary {
  requeued: number;
  linkStepsReset: number;
  adopted: number;
  /** Edits requested (name_drift, cancelled_visible): each batch re-enqueued for its sync run to make the edit. */
  editsRequested: number;
  /** Findings a repair skipped because the row changed under it (another runner got there first). */
  skipped: number;
}

interface InstituteCounts {
  instituteId: string;
  mappings: number;
  remoteClasses: number;
  /** Listed items without `_id`: presence of mapped classes was matched by name for these. */
  itemsWithoutId: number;
}

/** An institute of the pass: reconciled (no `error`), or not, because its listing failed. */
export type InstituteSummary = (InstituteCounts & { error?: undefined }) | UnreadInstitute;

/** An institute whose listing failed: none of its batches was looked at this pass. */
export interface UnreadInstitute extends InstituteCounts {
  /** Why the institute could not be reconciled this pass, naming its batches and what to do. */
  error: string;
  /** True when the remote refused the listing (HTTP 403/404): it will fail every pass until its batches are abandoned. */
  refused: boolean;
  /** The HTTP status of the failed listing, when the remote answered. */
  httpStatus?: number;
  /** The first of its batches the pass could not look at (abandoned ones excluded). */
  batchIds: string[];
  /** True when it has more batches than `mappings`: they were counted up to that many only. */
  mappingsAtLeast?: true;
}

export interface ReconcileReport {
  runId: number | null;
  trigger: string;
  dryRun: boolean;
  ok: boolean;
  startedAt: Date;
  finishedAt: Date;
  durationMs: number;
  counts: Record<Category, number>;
  /** Per category, up to `listLimit` findings (counts are always exact). */
  findings: Record<Category, Finding[]>;
  repairs: RepairSummary;
  unclassified: Unclassified;
  /** needs_review batches that stay with the operator, with the reason (capped like findings). */
  unresolved: Unresolved[];
  institutes: InstituteSummary[];
  /** Remote join-link checks (get-class) made this run, a bounded rotation over synced classes. */
  linkChecks: { checked: number; failed: number };
  /** Wall time per phase (listing, mappings, jobStates, classify, linkChecks, repairs), for tuning. */
  phasesMs: Record<string, number>;
  /** Honest caveats: e.g. presence matched by name only. */
  notes: string[];
  errors: string[];
}

/** A fresh `make()` for every category, in CATEGORIES order (the type checks that none is missing). */
function perCategory<T>(make: () => T): Record<Category, T> {
  return {
    in_sync: make(),
    missing_remote: make(),
    hidden_remote: make(),
    orphan_remote: make(),
    stuck: make(),
    link_missing: make(),
    duplicate_suspect: make(),
    needs_review_resolved: make(),
    name_drift: make(),
    cancelled_visible: make(),
  };
}

export const emptyCounts = (): Record<Category, number> => perCategory(() => 0);

export const emptyFindings = (): Record<Category, Finding[]> => perCategory((): Finding[] => []);
