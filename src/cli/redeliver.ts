// `classroom-sync redeliver MESSAGE_ID… | --failed | --pending`; see src/commands/redeliver.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import { UsageError } from './errors.ts';
import { withRuntime } from './with-runtime.ts';

export function registerRedeliverCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('redeliver')
    .argument('[messageIds...]', 'webhook messages to send again (ids as `deliveries` lists them)')
    .option('--failed', 'every given-up message (status failed), with a fresh retry schedule')
    .option('--pending', 'every pending message: its next attempt is now (an endpoint came back)')
    .description('send webhook messages again now, under the same message id')
    .action(async (messageIds: string[], opts: { failed?: boolean; pending?: boolean }) => {
      const all = opts.failed === true || opts.pending === true;
      if (!all && messageIds.length === 0) throw new UsageError('name at least one message id, or pass --failed or --pending');
      if (all && messageIds.length > 0) throw new UsageError('name message ids or pass --failed/--pending, not both');
      const { runRedeliver } = await import('../commands/redeliver.ts');
      await withRuntime(getConfig(), async (rt) => {
        process.exitCode = await runRedeliver(rt.database.db, all ? { failed: opts.failed === true, pending: opts.pending === true } : { messageIds });
      });
    });
}
