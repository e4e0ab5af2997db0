// `classroom-sync check`: is this configuration good enough to sync? See src/commands/check.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';

/** `envFile`: the .env the CLI loaded, if any, named in the first line of the output. */
export function registerCheckCommand(program: Command, getConfig: () => Config, envFile: string | undefined): Command {
  return program
    .command('check')
    .description('verify PostgreSQL, Redis and the classroom credentials and headers with one harmless read; exit code 1 on any failure')
    .action(async () => {
      const { runCheck } = await import('../commands/check.ts');
      process.exitCode = await runCheck(getConfig(), { envFile });
    });
}
