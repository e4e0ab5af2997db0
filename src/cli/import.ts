// `classroom-sync import FILE.csv|FILE.ndjson`: back-fills existing batches; see src/commands/import.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import { withPublishDeps } from './with-runtime.ts';

export function registerImportCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('import')
    .argument('<file>', 'FILE.csv (header batchId,name,subject[,instituteId][,more class fields]) or FILE.ndjson')
    .option('--format <format>', 'csv or ndjson (default: from the file name)')
    .description('back-fill existing batches from a file; rejected rows are listed and make the exit code 1')
    .action(async (file: string, opts: { format?: string }) => {
      const { runImport } = await import('../commands/import.ts');
      await withPublishDeps(getConfig(), async (deps) => {
        process.exitCode = await runImport(deps, file, opts.format === undefined ? {} : { format: opts.format });
      });
    });
}
