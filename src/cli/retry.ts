// `classroom-sync retry BATCH_ID… | --failed`; see src/commands/retry.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import { UsageError } from './errors.ts';
import { withRuntime } from './with-runtime.ts';

export function registerRetryCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('retry')
    .argument('[batchIds...]', 'batches to put back')
    .option('--failed', 'every batch in state failed')
    .option('--institute <id>', 'institute of the batches (default CLASSROOM_INSTITUTE_ID)')
    .description('put failed or needs_review batches back; they resume from their last safe step')
    .action(async (batchIds: string[], opts: { failed?: boolean; institute?: string }) => {
      if (!opts.failed && batchIds.length === 0) throw new UsageError('name at least one batch id, or pass --failed');
      const { runRetry } = await import('../commands/retry.ts');
      await withRuntime(getConfig(), async (rt) => {
        const request = { batchIds, allFailed: opts.failed === true, instituteId: opts.institute ?? rt.config.classroom.instituteId };
        process.exitCode = await runRetry({ db: rt.database.db, queue: rt.queue }, request);
      });
    });
}
