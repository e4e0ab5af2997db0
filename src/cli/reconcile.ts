// `classroom-sync reconcile [--dry-run] [--json]`: one pass on demand; see src/commands/reconcile.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import { DEFAULT_LINK_CHECKS } from '../reconcile/types.ts';
import { nonNegative } from './parse.ts';

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
      const { runReconcileCommand } = await import('../commands/reconcile.ts');
      const exitCode = await runReconcileCommand(getConfig(), {
        dryRun: flags.dryRun === true,
        json: flags.json === true,
        instituteIds: flags.institute ?? [],
        linkChecks: flags.linkChecks,
        listLimit: flags.limit,
      });
      if (exitCode !== 0) process.exitCode = exitCode;
    });
}
