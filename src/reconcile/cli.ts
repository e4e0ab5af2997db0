// `classroom-sync reconcile [--dry-run] [--json]`: one pass on demand, same code as the schedule.
import { type Command, InvalidArgumentError } from 'commander';
import pino from 'pino';
import type { Config } from '../config.ts';
import { createLogger } from '../logger.ts';
import { createRuntime } from '../runtime.ts';
import { DEFAULT_LINK_CHECKS, runReconciliation } from './run.ts';
import { CATEGORIES, REPAIRED, type Finding, type ReconcileReport } from './types.ts';

interface ReconcileFlags {
  dryRun?: boolean;
  json?: boolean;
  institute?: string[];
  linkChecks: number;
  limit: number;
}

export function registerReconcileCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('reconcile')
    .description('compare the remote listing with the stored mappings, repair what is safe, report the rest')
    .option('--dry-run', 'report only: change nothing (no re-enqueue, no state change, no adoption)')
    .option('--json', 'print the report as JSON')
    .option('--institute <id...>', 'only these institutes (default: every institute with batches, plus CLASSROOM_INSTITUTE_ID)')
    .option('--link-checks <n>', 'get-class calls for the join-link rotation this pass', nonNegative, DEFAULT_LINK_CHECKS)
    .option('--limit <n>', 'findings listed per category (counts are always exact)', nonNegative, 50)
    .action(async (flags: ReconcileFlags) => {
      const config = getConfig();
      // The report is this command's stdout; log lines go to stderr so `--json` stays parseable.
      const logger = createLogger({ level: config.logLevel, destination: pino.destination({ dest: 2, sync: true }) });
      const runtime = createRuntime(config, { logger });
      try {
        const report = await runReconciliation(
          { db: runtime.database.db, classroom: runtime.classroom, queue: runtime.queue, logger: runtime.logger },
          {
            trigger: 'cli',
            dryRun: flags.dryRun === true,
            defaultInstituteId: config.classroom.instituteId,
            stuckAfterMs: config.sync.stuckAfterMs,
            linkChecks: flags.linkChecks,
            listLimit: flags.limit,
            ...(flags.institute?.length ? { instituteIds: flags.institute } : {}),
          },
        );
        console.log(flags.json ? JSON.stringify(report) : formatReport(report));
        if (!report.ok) process.exitCode = 1;
      } finally {
        await runtime.close();
      }
    });
}

export function formatReport(report: ReconcileReport): string {
  const seconds = (report.durationMs / 1000).toFixed(2);
  const lines = [
    `reconciliation run ${report.runId ?? '-'}${report.dryRun ? ' (dry run: nothing changed)' : ''}: ` +
      `${report.institutes.length} institute(s), ${seconds} s`,
    '',
    `${'category'.padEnd(22)} ${'count'.padStart(7)}  action`,
  ];
  for (const category of CATEGORIES) {
    const action = REPAIRED[category] ? (report.dryRun ? `would ${REPAIRED[category]}` : REPAIRED[category]) : category === 'in_sync' ? '' : 'report';
    lines.push(`${category.padEnd(22)} ${String(report.counts[category]).padStart(7)}  ${action}`);
  }
  const u = report.unclassified;
  lines.push('', `not classified: ${u.inFlight} in flight, ${u.tooRecent} too recent to judge, ${u.unresolvedReview} needs_review unresolved, ${u.failedWithoutClass} failed without a class`);
  if (!report.dryRun) {
    const r = report.repairs;
    lines.push(`repairs: ${r.requeued} re-enqueued, ${r.linkStepsReset} link steps reset, ${r.adopted} adopted, ${r.skipped} skipped (changed meanwhile)`);
  }
  lines.push(`join-link checks: ${report.linkChecks.checked} read, ${report.linkChecks.failed} failed`);
  for (const category of CATEGORIES) {
    if (category === 'in_sync' || report.findings[category].length === 0) continue;
    lines.push('', `${category}:`);
    for (const f of report.findings[category]) lines.push(`  ${describe(f)}`);
    const hidden = report.counts[category] - report.findings[category].length;
    if (hidden > 0) lines.push(`  … and ${hidden} more (--limit or --json)`);
  }
  if (report.unresolved.length > 0) {
    lines.push('', 'needs_review, still for an operator:');
    for (const f of report.unresolved) lines.push(`  ${describe(f)}`);
  }
  for (const note of report.notes) lines.push('', `note: ${note}`);
  for (const error of report.errors) lines.push('', `error: ${error}`);
  return lines.join('\n');
}

function describe(f: Omit<Finding, 'category'>): string {
  const batch = f.batchId === null ? 'no batch' : `batch ${f.batchId}`;
  const cls = f.classId === null ? 'class without _id' : `class ${f.classId}`;
  const extra = f.candidates ? ` candidates ${f.candidates.map((c) => c ?? '(no _id)').join(', ')}` : '';
  return `${batch} → ${cls} "${f.className}"${f.state ? ` [${f.state}]` : ''}${extra}${f.detail ? `: ${f.detail}` : ''}`;
}

function nonNegative(value: string): number {
  const n = Number.parseInt(value, 10);
  if (!Number.isInteger(n) || n < 0 || String(n) !== value.trim()) throw new InvalidArgumentError('must be a whole number ≥ 0');
  return n;
}
