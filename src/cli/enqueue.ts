// `classroom-sync enqueue [FILE]`: NDJSON events from a file or stdin; see src/commands/enqueue.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import type { EnqueueReport } from '../commands/enqueue.ts';
import { withPublishDeps } from './with-runtime.ts';

export function registerEnqueueCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('enqueue')
    .argument('[file]', 'NDJSON file of batch-created events; stdin when absent or "-"')
    .option('--backfill', 'the events are history, not live: they wait in the backfill lane, behind live batches')
    .description('record and enqueue batch-created events; invalid lines are reported and make the exit code 1')
    .action(async (file: string | undefined, flags: { backfill?: boolean }) => {
      const { enqueueNdjson, openInput } = await import('../commands/enqueue.ts');
      await withPublishDeps(getConfig(), async (deps) => {
        const lane = flags.backfill ? 'backfill' : 'live';
        const report = await enqueueNdjson(deps, openInput(file), undefined, { lane });
        printEnqueueReport(report);
        if (report.rejected.length > 0) process.exitCode = 1;
      });
    });
}

/** Each rejected line on stderr, then the totals on stdout. */
function printEnqueueReport(report: EnqueueReport): void {
  for (const r of report.rejected) {
    console.error(`line ${r.line}: ${r.problems.map((p) => `${p.field} ${p.reason}`).join('; ')}`);
  }
  const stale = report.stale > 0 ? `, ${report.stale} stale (version not above the last applied: ignored)` : '';
  console.log(`accepted ${report.accepted} (${report.duplicates} already known${stale}), rejected ${report.rejected.length}`);
}
