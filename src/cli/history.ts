// `classroom-sync history BATCH_ID [--json]`: what happened to a batch, and when; see src/commands/history.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import { withRuntime } from './with-runtime.ts';

export function registerHistoryCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('history')
    .argument('<batchId>', 'the batch whose timeline to print')
    .option('--json', 'print JSON')
    .option('--institute <id>', 'institute of the batch (default CLASSROOM_INSTITUTE_ID)')
    .description("a batch's audit trail: every state transition and remote call, oldest first, then its webhook messages")
    .action(async (batchId: string, opts: { json?: boolean; institute?: string }) => {
      const { runHistory } = await import('../commands/history.ts');
      await withRuntime(getConfig(), async (rt) => {
        const instituteId = opts.institute ?? rt.config.classroom.instituteId;
        const exitCode = await runHistory(rt.database.db, { batchId, instituteId, json: opts.json === true });
        if (exitCode !== 0) process.exitCode = exitCode;
      });
    });
}
