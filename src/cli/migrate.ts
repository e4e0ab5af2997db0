// `classroom-sync migrate`: creates the database if missing and applies the migrations.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';

export function registerMigrateCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('migrate')
    .description('create the database if missing and apply migrations (safe to run twice)')
    .action(async () => {
      const { runMigrations } = await import('../db/migrate.ts');
      const { createdDatabase } = await runMigrations(getConfig().databaseUrl, {
        onRetry: (error, waitMs) =>
          console.error(
            `lost the PostgreSQL connection while migrating (${error instanceof Error ? error.message : String(error)}); trying again in ${waitMs} ms`,
          ),
      });
      console.log(createdDatabase ? 'database created; migrations applied' : 'migrations applied; database is up to date');
    });
}
