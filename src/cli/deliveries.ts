// `classroom-sync deliveries [--failed] [--batch ID] [--json]`; see src/commands/deliveries.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import { integer } from './parse.ts';
import { withRuntime } from './with-runtime.ts';

interface DeliveriesFlags {
  failed?: boolean;
  batch?: string;
  institute?: string;
  limit: number;
  json?: boolean;
}

export function registerDeliveriesCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('deliveries')
    .option('--failed', 'only given-up messages (status failed): `redeliver` sends them again')
    .option('--batch <id>', "only this batch's messages")
    .option('--institute <id>', 'only this institute (with --batch: its institute, default CLASSROOM_INSTITUTE_ID; else every institute)')
    .option('--limit <n>', 'the newest this many', integer(1, 100_000), 100)
    .option('--json', 'print one JSON array')
    .description('webhook messages, newest first: type, batch, status, attempts, next attempt and last answer (never their data)')
    .action(async (flags: DeliveriesFlags) => {
      const { runDeliveries } = await import('../commands/deliveries.ts');
      await withRuntime(getConfig(), async (rt) => {
        const instituteId = flags.institute ?? (flags.batch === undefined ? undefined : rt.config.classroom.instituteId);
        const request = { failed: flags.failed === true, batchId: flags.batch, instituteId, limit: flags.limit, json: flags.json === true };
        const exitCode = await runDeliveries(rt.database.db, request);
        if (exitCode !== 0) process.exitCode = exitCode;
      });
    });
}
