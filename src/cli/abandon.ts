// `classroom-sync abandon BATCH_ID… [--undo]`: gives batches up for good, or takes that back; see src/commands/abandon.ts.
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Config } from '../config/config.ts';
import { withRuntime } from './with-runtime.ts';

interface AbandonFlags {
  institute?: string;
  reason?: string;
  undo?: boolean;
  confirmNoClass?: boolean;
  json?: boolean;
}

const MAX_REASON = 500;

export function registerAbandonCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('abandon')
    .argument('<batchIds...>', 'batches to give up (or, with --undo, to take back)')
    .option('--institute <id>', 'institute of the batches (default CLASSROOM_INSTITUTE_ID)')
    .option('--reason <text>', 'why, kept with the batch and in its history', reasonText)
    .option('--undo', 'take the abandon back: each batch returns to the state it was abandoned from (or where what changed meanwhile leads)')
    .addOption(
      new Option(
        '--confirm-no-class',
        'you checked the remote: no class of these batches exists. Rules out the doubt of an add-class whose outcome was unknown, so reconciliation stops reporting them',
      ).conflicts('undo'),
    )
    .option('--json', 'print one JSON result per batch')
    .description(
      'give up batches that will never get a class (e.g. the remote refuses their institute): no more syncing, reconciliation or alerts for them; --undo reverses it',
    )
    .action(async (batchIds: string[], flags: AbandonFlags) => {
      const { runAbandon } = await import('../commands/abandon.ts');
      const config = getConfig();
      await withRuntime(config, async (rt) => {
        const exitCode = await runAbandon(
          { db: rt.database.db, queue: rt.queue, logger: rt.logger },
          {
            batchIds,
            instituteId: flags.institute ?? config.classroom.instituteId,
            defaultInstituteId: config.classroom.instituteId,
            reason: flags.reason ?? null,
            undo: flags.undo === true,
            confirmNoClass: flags.confirmNoClass === true,
            json: flags.json === true,
          },
        );
        if (exitCode !== 0) process.exitCode = exitCode;
      });
    });
}

function reasonText(value: string): string {
  const text = value.trim();
  if (text === '') throw new InvalidArgumentError('must not be empty (leave --reason out instead)');
  if (text.length > MAX_REASON) throw new InvalidArgumentError(`must be at most ${MAX_REASON} characters`);
  return text;
}
