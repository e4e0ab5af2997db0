// `classroom-sync reconcile [--dry-run] [--json]`: one pass on demand, same code as the schedule,
// and the report as an operator reads it.
import pino from 'pino';
import type { Config } from '../config/config.ts';
import { createLogger } from '../logging/logger.ts';
import { everyKeyRefused } from '../reconcile/accounts.ts';
import { reconcileOptionsOf } from '../reconcile/settings.ts';
import { reconcileDepsOf } from '../reconcile/setup.ts';
import { runReconciliation } from '../reconcile/run.ts';
import { CATEGORIES, DEFAULT_REPAIR_SETTINGS, type Finding, type ReconcileReport, type RepairSettings, repairActions } from '../reconcile/types.ts';
import { createRuntime } from '../runtime/runtime.ts';

export interface ReconcileRequest {
  dryRun: boolean;
  json: boolean;
  /** Empty: every institute with batches, plus CLASSROOM_INSTITUTE_ID. */
  instituteIds: readonly string[];
  linkChecks: number;
  listLimit: number;
}

/** Runs one pass and prints its report; returns the exit code (1 when the key is refused or the pass was not ok). */
export async function runReconcileCommand(config: Config, request: ReconcileRequest): Promise<number> {
  // The report is this command's stdout; log lines go to stderr so `--json` stays parseable.
  const logger = createLogger({ level: config.logLevel, destination: pino.destination({ dest: 2, sync: true }) });
  const runtime = createRuntime(config, { logger });
  try {
    const refused = await everyKeyRefused(runtime.remotes);
    if (refused) {
      console.error(
        `not reconciling: the classroom service refuses the API key (${refused}); workers probe it every ${config.classroom.keyProbeEveryMs} ms and resume by themselves`,
      );
      return 1;
    }
    const report = await runReconciliation(reconcileDepsOf(runtime), {
      trigger: 'cli',
      dryRun: request.dryRun,
      ...reconcileOptionsOf(config),
      linkChecks: request.linkChecks,
      listLimit: request.listLimit,
      ...(request.instituteIds.length ? { instituteIds: request.instituteIds } : {}),
    });
    console.log(request.json ? JSON.stringify(report) : formatReport(report, config.sync));
    return report.ok ? 0 : 1;
  } finally {
    await runtime.close();
  }
}

/** The report as text: a header, counts and actions per category, repairs, then the findings listed. */
/** The report as text; `settings` decide which categories this pass repaired (RECONCILE_REPAIR_NAMES, CLASSROOM_ARCHIVE_ON_CANCEL). */
export function formatReport(report: ReconcileReport, settings: RepairSettings = DEFAULT_REPAIR_SETTINGS): string {
  return [...summaryLines(report, repairActions(settings)), ...findingLines(report)].join('\n');
}

function summaryLines(report: ReconcileReport, repaired: ReturnType<typeof repairActions>): string[] {
  const seconds = (report.durationMs / 1000).toFixed(2);
  const unread = report.institutes.filter((i) => i.error).length;
  const lines = [
    `reconciliation run ${report.runId ?? '-'}${report.dryRun ? ' (dry run: nothing changed)' : ''}: ` +
      `${report.institutes.length} institute(s)${unread > 0 ? ` (${unread} could not be read: see the errors at the end)` : ''}, ${seconds} s`,
    '',
    `${'category'.padEnd(22)} ${'count'.padStart(7)}  action`,
  ];
  for (const category of CATEGORIES) {
    const action = repaired[category] ? (report.dryRun ? `would ${repaired[category]}` : repaired[category]) : category === 'in_sync' ? '' : 'report';
    lines.push(`${category.padEnd(22)} ${String(report.counts[category]).padStart(7)}  ${action}`);
  }
  const u = report.unclassified;
  lines.push(
    '',
    `not classified: ${u.inFlight} in flight, ${u.tooRecent} too recent to judge, ${u.unresolvedReview} needs_review unresolved, ${u.failedWithoutClass} failed without a class, ${u.cancelledWithoutClass} cancelled without a class, ${u.abandonedInDoubt} abandoned while a class may exist`,
  );
  if (!report.dryRun) {
    const r = report.repairs;
    lines.push(
      `repairs: ${r.requeued} re-enqueued, ${r.linkStepsReset} link steps reset, ${r.adopted} adopted, ${r.editsRequested} edits requested, ${r.skipped} skipped (changed meanwhile)`,
    );
  }
  lines.push(`join-link checks: ${report.linkChecks.checked} read, ${report.linkChecks.failed} failed`);
  return lines;
}

/** Each category's listed findings (with how many more the limit hid), the unresolved reviews, notes and errors. */
function findingLines(report: ReconcileReport): string[] {
  const lines: string[] = [];
  for (const category of CATEGORIES) {
    if (category === 'in_sync' || report.findings[category].length === 0) continue;
    lines.push('', `${category}:`);
    for (const f of report.findings[category]) lines.push(`  ${describe(f)}`);
    const hidden = report.counts[category] - report.findings[category].length;
    if (hidden > 0) lines.push(`  … and ${hidden} more (--limit or --json)`);
  }
  if (report.unresolved.length > 0) {
    lines.push('', 'still for an operator (needs_review, or abandoned while a class may exist):');
    for (const f of report.unresolved) lines.push(`  ${describe(f)}`);
  }
  for (const note of report.notes) lines.push('', `note: ${note}`);
  for (const error of report.errors) lines.push('', `error: ${error}`);
  return lines;
}

function describe(f: Omit<Finding, 'category'>): string {
  const batch = f.batchId === null ? 'no batch' : `batch ${f.batchId}`;
  const cls = f.classId === null ? 'class without _id' : `class ${f.classId}`;
  const extra = f.candidates ? ` candidates ${f.candidates.map((c) => c ?? '(no _id)').join(', ')}` : '';
  return `${batch} → ${cls} "${f.className}"${f.state ? ` [${f.state}]` : ''}${extra}${f.detail ? `: ${f.detail}` : ''}`;
}
