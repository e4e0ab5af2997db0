// Collects the per-institute classifications of a pass into one report: exact counts, capped lists,
// repairs, honest notes, errors.
import { type Classification, type InSync, inSyncFinding } from './classify.ts';
import type { LinkCheckResult } from './links.ts';
import { type RepairInput, type RepairOutcome, storedBatch } from './repair.ts';
import type { RunClose } from '../mapping/index.ts';
import {
  CATEGORIES,
  type Finding,
  type InstituteSummary,
  type ReconcileReport,
  type RepairSettings,
  type RepairSummary,
  type Unclassified,
  type Unresolved,
  type UnreadInstitute,
  emptyCounts,
  emptyFindings,
  repairActions,
} from './types.ts';

interface Start {
  runId: number;
  trigger: string;
  dryRun: boolean;
  startedAt: Date;
  listLimit: number;
}

export class ReportBuilder {
  /** Every category but in_sync (kept compact in `inSyncChunks` until reported). */
  private readonly findings = emptyFindings();
  private readonly inSyncChunks: { instituteId: string; entries: InSync[] }[] = [];
  /** in_sync rows whose join-link check moved them to link_missing. */
  private readonly flagged = new Set<number>();
  private readonly unresolved: Unresolved[] = [];
  private readonly unclassified: Unclassified = {
    inFlight: 0,
    tooRecent: 0,
    unresolvedReview: 0,
    failedWithoutClass: 0,
    cancelledWithoutClass: 0,
    abandonedInDoubt: 0,
  };
  private readonly institutes: InstituteSummary[] = [];
  private readonly notes: string[] = [];
  private readonly errors: string[] = [];
  private repairs: RepairOutcome = { requeued: 0, linkStepsReset: 0, adopted: 0, editsRequested: 0, skipped: 0, adoptions: [] };
  private linkChecks = { checked: 0, failed: 0 };
  private readonly phasesMs: Record<string, number> = {};

  constructor(private readonly start: Start) {}

  add(mappings: number, c: Classification): void {
    const { instituteId } = c;
    for (const category of CATEGORIES) append(this.findings[category], c.findings[category]);
    this.inSyncChunks.push({ instituteId, entries: c.inSync });
    append(this.unresolved, c.unresolved);
    for (const key of Object.keys(this.unclassified) as (keyof Unclassified)[]) this.unclassified[key] += c.unclassified[key];
    this.institutes.push({ instituteId, mappings, remoteClasses: c.remoteClasses, itemsWithoutId: c.itemsWithoutId });
    if (c.itemsWithoutId > 0) {
      const byName =
        c.inSync.filter((e) => e.byName).length +
        CATEGORIES.reduce((n, cat) => n + c.findings[cat].filter((f) => f.matchedBy === 'name' && cat !== 'needs_review_resolved').length, 0);
      this.notes.push(
        `institute ${instituteId}: ${c.itemsWithoutId} of ${c.remoteClasses} listed classes carry no _id, so ${byName} mapped ` +
          'batches were matched by class name only (a same-named class can stand in for a deleted one) and orphans among them have no id to act on',
      );
    }
  }

  /** Runs one phase of the pass and adds its wall time to `phasesMs` (summed over institutes). */
  async timed<T>(phase: string, fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await fn();
    } finally {
      this.phasesMs[phase] = Math.round((this.phasesMs[phase] ?? 0) + performance.now() - started);
    }
  }

  /** An institute the pass could not reconcile; its `error` names it and why (see institute-failure.ts). */
  instituteFailed(summary: UnreadInstitute): void {
    this.institutes.push(summary);
    this.error(summary.error);
  }

  error(message: string): void {
    this.errors.push(message);
  }

  inSync(): readonly { instituteId: string; entries: readonly InSync[] }[] {
    return this.inSyncChunks;
  }

  /** Moves in_sync batches whose remote link is blank or changed into link_missing. */
  linkChecked(result: LinkCheckResult): void {
    this.linkChecks = { checked: result.checked, failed: result.failed };
    for (const [finding, detail] of result.flagged) {
      // Link checks look only at in_sync batches, which are stored: a finding without a row is a bug.
      this.flagged.add(storedBatch(finding).rowId);
      this.findings.link_missing.push({ ...finding, category: 'link_missing', detail });
    }
  }

  /** What the repairs change: always stuck, link_missing and needs_review_resolved; the edit requests as `settings` allow. */
  repairInput(settings: RepairSettings): RepairInput {
    const actions = repairActions(settings);
    const editsOf = (category: 'name_drift' | 'cancelled_visible') => (actions[category] === 'request_edit' ? this.findings[category] : []);
    return {
      stuck: this.findings.stuck,
      linkMissing: this.findings.link_missing,
      adopt: this.findings.needs_review_resolved,
      requestEdit: [...editsOf('name_drift'), ...editsOf('cancelled_visible')],
    };
  }

  setRepairs(repairs: RepairOutcome): void {
    this.repairs = repairs;
  }

  closing(linkCheckCursor: number | null): RunClose {
    const { adoptions, ...summary } = this.repairs;
    return {
      institutes: this.institutes.map((i) => i.instituteId),
      counts: this.counts(),
      repairs: this.start.dryRun ? {} : { ...summary, adoptions: adoptions.slice(0, this.start.listLimit) },
      error: this.errors.length > 0 ? this.errors.join('\n') : null,
      linkCheckCursor,
    };
  }

  build(finishedAt: Date): ReconcileReport {
    const { adoptions: _adoptions, ...repairs } = this.repairs;
    const limit = this.start.listLimit;
    const findings = emptyFindings();
    for (const category of CATEGORIES) findings[category] = this.findings[category].slice(0, limit);
    findings.in_sync = this.inSyncList(limit);
    return {
      runId: this.start.runId,
      trigger: this.start.trigger,
      dryRun: this.start.dryRun,
      ok: this.errors.length === 0,
      startedAt: this.start.startedAt,
      finishedAt,
      durationMs: Math.max(0, finishedAt.getTime() - this.start.startedAt.getTime()),
      counts: this.counts(),
      findings,
      repairs: repairs satisfies RepairSummary,
      unclassified: { ...this.unclassified },
      unresolved: this.unresolved.slice(0, limit),
      institutes: this.institutes,
      linkChecks: this.linkChecks,
      phasesMs: { ...this.phasesMs },
      notes: this.notes,
      errors: this.errors,
    };
  }

  private counts() {
    const counts = emptyCounts();
    for (const category of CATEGORIES) counts[category] = this.findings[category].length;
    counts.in_sync = this.inSyncChunks.reduce((n, c) => n + c.entries.length, 0) - this.flagged.size;
    return counts;
  }

  private inSyncList(limit: number): Finding[] {
    const list: Finding[] = [];
    for (const { instituteId, entries } of this.inSyncChunks) {
      for (const entry of entries) {
        if (list.length >= limit) return list;
        if (!this.flagged.has(entry.m.id)) list.push(inSyncFinding(instituteId, entry));
      }
    }
    return list;
  }
}

/** push(...items) overflows the call stack past ~100k arguments. */
function append<T>(target: T[], items: readonly T[]): void {
  for (const item of items) target.push(item);
}
