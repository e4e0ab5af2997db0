// `classroom-sync history BATCH_ID [--json]`: what happened to a batch, and when.
import type { Command } from 'commander';
import type { Config } from '../config.ts';
import { withRuntime } from './with-runtime.ts';

export function registerHistoryCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('history')
    .argument('<batchId>', 'the batch whose timeline to print')
    .option('--json', 'print JSON')
    .option('--institute <id>', 'institute of the batch (default CLASSROOM_INSTITUTE_ID)')
    .description("a batch's audit trail: every state transition and remote call, oldest first")
    .action(async (batchId: string, opts: { json?: boolean; institute?: string }) => {
      const { formatTimeline, institutesOf, notKnownUnder, readTimeline } = await import('../read-model/index.ts');
      await withRuntime(getConfig(), async (rt) => {
        const instituteId = opts.institute ?? rt.config.classroom.instituteId;
        const timeline = await readTimeline(rt.database.db, { instituteId, batchId });
        if (timeline) {
          console.log(opts.json ? JSON.stringify(timeline) : formatTimeline(timeline) || '(no events recorded)');
          return;
        }
        console.error(`batch ${batchId} is ${notKnownUnder(instituteId, await institutesOf(rt.database.db, batchId))}`);
        process.exitCode = 1;
      });
    });
}
