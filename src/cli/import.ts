// `classroom-sync import FILE.csv|FILE.ndjson`: back-fills existing batches; see src/commands/import.ts.
import type { Command } from 'commander';
import type { Config } from '../config.ts';
import { runImport } from '../commands/import.ts';
import { publishDeps, withRuntime } from './with-runtime.ts';

export function registerImportCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('import')
    .argument('<file>', 'FILE.csv (header batchId,name,subject[,instituteId][,more class fields]) or FILE.ndjson')
    .option('--format <format>', 'csv or ndjson (default: from the file name)')
    .description('back-fill existing batches from a file; rejected rows are listed and make the exit code 1')
    .action(async (file: string, opts: { format?: string }) => {
      await withRuntime(getConfig(), async (rt) => {
        process.exitCode = await runImport(publishDeps(rt), file, opts.format === undefined ? {} : { format: opts.format });
      });
    });
}
