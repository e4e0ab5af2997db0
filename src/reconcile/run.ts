// One reconciliation pass: for each institute, one listing call (through the shared rate limit) and
// one select of its mappings; classify; a bounded rotation of join-link checks; then the safe repairs
// (none with dryRun). Every pass is recorded in reconciliation_runs and logged, and handed to onRun.
import type { ClientFor } from './accounts.ts';
import type { Db } from '../mapping/index.ts';
import type { Logger } from '../logging/logger.ts';
import type { NameRules } from '../sync/matching.ts';
import type { SyncQueue } from '../sync/queue.ts';
import { classify } from './classify.ts';
import { checkLinks, pickForLinkCheck } from './links.ts';
import { describeInstituteFailure } from './institute-failure.ts';
import { batchesOf, institutesToReconcile, loadMappings, withoutLiveJob } from './mappings.ts';
import { ReportBuilder } from './report.ts';
import { repair } from './repair.ts';
import { type ListingCacheFor, shareListing } from './share-listing.ts';
import { clockFrom } from '../support/clock.ts';
import { closeRun, lastLinkCursor, openRun } from '../mapping/index.ts';
import { DEFAULT_LINK_CHECKS, DEFAULT_REPAIR_SETTINGS, type ReconcileReport, type RepairSettings } from './types.ts';

export interface ReconcileDeps {
  db: Db;
  /** The client of the account serving an institute (throws AccountUnavailableError when there is none to use). */
  clientFor: ClientFor;
  /** The sync queue: repairs re-enqueue batches on it. */
  queue: SyncQueue;
  logger: Logger;
  /** Where a listing is shared with batches in doubt (src/reconcile/share-listing.ts); none: not shared. */
  listingCache?: ListingCacheFor | undefined;
}

export interface ReconcileOptions {
  /** Recorded with the run: `schedule`, `cli`, … */
  trigger: string;
  dryRun?: boolean;
  /** CLASSROOM_INSTITUTE_ID: reconciled even before any batch names it. */
  defaultInstituteId: string;
  /** Every institute an account serves: reconciled even before any batch names them. */
  configuredInstituteIds?: readonly string[];
  /** Only these institutes (default: every institute in batch_classes plus the configured ones). */
  instituteIds?: readonly string[];
  /** A non-terminal batch untouched this long, with no live job, is stuck (SYNC_STUCK_AFTER). */
  stuckAfterMs: number;
  /** A ClassID stored this recently and not listed yet is not reported missing (listing lag). */
  graceMs?: number;
  /** get-class calls per pass for the join-link rotation (default 20; 0 turns it off). */
  linkChecks?: number;
  /** Findings listed per category in the report (counts stay exact). */
  listLimit?: number;
  /** The sync's name-matching rule (CLASSROOM_NAME_MIN_CUT); the default when absent. */
  nameRules?: NameRules;
  /** RECONCILE_REPAIR_NAMES: request an edit back for name_drift (default false: only reported). */
  repairNames?: boolean;
  /** CLASSROOM_ARCHIVE_ON_CANCEL: request archiving again for cancelled_visible (default true). */
  archiveOnCancel?: boolean;
  /** Called with every finished report (metrics). Must not throw; a throw is logged and ignored. */
  onRun?: (report: ReconcileReport) => void;
}

/** Batch ids named in the error of an institute that could not be read (the count stays exact). */
const FAILED_INSTITUTE_IDS = 50;

export async function runReconciliation(deps: ReconcileDeps, options: ReconcileOptions): Promise<ReconcileReport> {
  const dryRun = options.dryRun === true;
  const log = deps.logger.child({ component: 'reconcile', trigger: options.trigger, dryRun });
  const opened = await openRun(deps.db, options.trigger, dryRun);
  const builder = new ReportBuilder({ runId: opened.id, trigger: options.trigger, dryRun, startedAt: opened.startedAt, listLimit: options.listLimit ?? 1_000 });
  let cursor: number | null = null;
  try {
    const institutes = options.instituteIds ?? (await institutesToReconcile(deps.db, [options.defaultInstituteId, ...(options.configuredInstituteIds ?? [])]));
    const dbNow = clockFrom(opened.startedAt);
    for (const instituteId of institutes) await reconcileInstitute(deps, options, builder, instituteId, dbNow);
    cursor = await builder.timed('linkChecks', () => runLinkChecks(deps, options, builder));
    if (!dryRun) builder.setRepairs(await builder.timed('repairs', () => repair(deps, builder.repairInput(repairSettingsOf(options)), opened.id)));
  } catch (error) {
    builder.error(`pass stopped: ${messageOf(error)}`);
  }
  const finishedAt = await closeRun(deps.db, opened.id, builder.closing(cursor)).catch((error: unknown) => {
    builder.error(`could not record the end of the pass: ${messageOf(error)}`);
    return new Date();
  });
  const report = builder.build(finishedAt);
  logReport(log, report);
  try {
    options.onRun?.(report);
  } catch (error) {
    log.warn({ err: error }, 'onRun callback threw; ignored');
  }
  return report;
}

/** The listing is read before the mappings, so a class stored in between is "recent", never "missing". */
async function reconcileInstitute(
  deps: ReconcileDeps,
  options: ReconcileOptions,
  builder: ReportBuilder,
  instituteId: string,
  dbNow: () => number,
): Promise<void> {
  try {
    const classroom = await deps.clientFor(instituteId);
    // When the request left, by the database's clock: a batch in doubt may settle on this listing.
    let readAt: number | undefined;
    const beforeSend = async () => {
      readAt = dbNow();
    };
    const listing = await builder.timed('listing', () => classroom.listClasses(instituteId, {}, { beforeSend }));
    const mappings = await builder.timed('mappings', () =>
      loadMappings(deps.db, instituteId, { stuckAfterMs: options.stuckAfterMs, graceMs: options.graceMs ?? options.stuckAfterMs }),
    );
    await shareListing(deps.listingCache?.(instituteId), instituteId, { readAt, listing }, mappings);
    const noLiveJob = await builder.timed('jobStates', () => withoutLiveJob(deps.queue, instituteId, mappings));
    const classification = await builder.timed('classify', async () =>
      classify({ instituteId, mappings, listing, noLiveJob, ...(options.nameRules ? { rules: options.nameRules } : {}) }),
    );
    builder.add(mappings.length, classification);
  } catch (error) {
    // One institute's failure (a 403, a timeout) must not hide what the others show, nor stop their repairs.
    const limit = Math.min(options.listLimit ?? FAILED_INSTITUTE_IDS, FAILED_INSTITUTE_IDS);
    const batches = await batchesOf(deps.db, instituteId, limit).catch((readError: unknown) => {
      // The report still names the institute and why; only the list of its batches is missing.
      builder.error(`could not list the batches of institute ${instituteId}: ${messageOf(readError)}`);
      return { count: 0, more: false, batchIds: [] };
    });
    builder.instituteFailed(describeInstituteFailure({ instituteId, error, isDefault: instituteId === options.defaultInstituteId, batches }));
  }
}

async function runLinkChecks(deps: ReconcileDeps, options: ReconcileOptions, builder: ReportBuilder): Promise<number | null> {
  const budget = options.linkChecks ?? DEFAULT_LINK_CHECKS;
  if (budget <= 0) return null;
  const picked = pickForLinkCheck(builder.inSync(), budget, await lastLinkCursor(deps.db));
  const result = await checkLinks(deps, picked);
  builder.linkChecked(result);
  return result.cursor;
}

function logReport(log: Logger, report: ReconcileReport): void {
  const { counts, repairs, durationMs, runId } = report;
  const drift = Object.entries(counts).filter(([category, n]) => category !== 'in_sync' && n > 0);
  const fields = { runId, counts, repairs, unclassified: report.unclassified, durationMs, errors: report.errors };
  if (!report.ok) log.error(fields, 'reconciliation finished with errors');
  else if (drift.length > 0) log.warn(fields, `reconciliation found drift: ${drift.map(([c, n]) => `${c}=${n}`).join(' ')}`);
  else log.info(fields, 'reconciliation: everything in sync');
  for (const note of report.notes) log.warn({ runId }, note);
  // One line per institute that could not be read, with its id as a field to search and alert on.
  for (const i of report.institutes) {
    if (i.error) log.warn({ runId, instituteId: i.instituteId, refused: i.refused, httpStatus: i.httpStatus, batches: i.mappings }, i.error);
  }
}

const repairSettingsOf = (options: ReconcileOptions): RepairSettings => ({
  repairNames: options.repairNames ?? DEFAULT_REPAIR_SETTINGS.repairNames,
  archiveOnCancel: options.archiveOnCancel ?? DEFAULT_REPAIR_SETTINGS.archiveOnCancel,
});

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
