// `classroom-sync status [BATCH_ID]`: counts of batches by state, or one batch, from the read model.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import type { StatusFlags } from './status-print.ts';
import { withRuntime } from './with-runtime.ts';

export function registerStatusCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('status')
    .argument('[batchId]', 'show one batch instead of counts by state')
    .option('--json', 'print JSON')
    .option('--institute <id>', 'institute of the batch (default CLASSROOM_INSTITUTE_ID)')
    .option('--show-link', 'print the full join link (it is a secret: anyone holding it can join)')
    .description('counts of batches by state, or one batch')
    .action(async (batchId: string | undefined, opts: StatusFlags) => {
      const { printBatch, printCounts } = await import('./status-print.ts');
      await withRuntime(getConfig(), (rt) => (batchId ? printBatch(rt, batchId, opts) : printCounts(rt, opts.json === true)));
    });
}
