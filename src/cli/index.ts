// The CLI (started by src/cli/main.ts, the package's bin). Each command is wired in its own file of this folder;
// what a command does lives in src/commands/ and the domain folders below.
import { Command, Option } from 'commander';
import type { Config } from '../config/config.ts';
import { packageVersion } from '../support/version.ts';
import { registerAbandonCommand } from './abandon.ts';
import { registerCheckCommand } from './check.ts';
import { registerDeliveriesCommand } from './deliveries.ts';
import { registerDemoCommand } from './demo.ts';
import { loadDotEnv } from './dotenv.ts';
import { registerEnqueueCommand } from './enqueue.ts';
import { type FatalContext, reportFatal } from './errors.ts';
import { registerHistoryCommand } from './history.ts';
import { registerImportCommand } from './import.ts';
import { registerMigrateCommand } from './migrate.ts';
import { registerReconcileCommand } from './reconcile.ts';
import { registerRedeliverCommand } from './redeliver.ts';
import { registerRetryCommand } from './retry.ts';
import { registerSandboxCommand } from './sandbox.ts';
import { registerStatusCommand } from './status.ts';
import { registerWorkerCommand } from './worker.ts';

/** Runs the command `argv` names. `dotEnv` loads `.env` (main.ts has loaded it already, before tracing). */
export async function main(argv: string[], dotEnv: () => string | undefined = loadDotEnv): Promise<void> {
  // Known before parsing, so that even an error while parsing can show its stack.
  const context: FatalContext = { verbose: argv.includes('--verbose') };
  let program: Command;
  try {
    program = buildProgram(dotEnv(), context);
  } catch (error) {
    process.exitCode = reportFatal(error, context);
    return;
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.exitCode = reportFatal(error, context);
  }
}

/** Every command, in the order `--help` lists them. The configuration is read once, by the first command that needs it. */
function buildProgram(envFile: string | undefined, context: FatalContext): Command {
  const program = new Command('classroom-sync')
    .description('Keeps your batches in step with the remote classroom service: one class and join link per batch.')
    .version(packageVersion(), '-V, --version', 'print the version of classroom-sync')
    .option('--verbose', 'print the stack trace of an error (demo: also log at LOG_LEVEL)')
    .showHelpAfterError();
  let config: Config | undefined;
  // The configuration's schemas (zod) load before a command's action, never for --help or --version.
  let load: (() => Config) | undefined;
  program.hook('preAction', async () => {
    load ??= (await import('../config/config.ts')).loadConfig;
  });
  const getConfig = () => {
    if (!load) throw new Error('the configuration was asked for before a command ran');
    config ??= load();
    // Lets an error explained later name the database it was about.
    context.databaseUrl = config.databaseUrl;
    return config;
  };
  registerMigrateCommand(program, getConfig);
  registerWorkerCommand(program, getConfig);
  registerEnqueueCommand(program, getConfig);
  registerStatusCommand(program, getConfig);
  registerHistoryCommand(program, getConfig);
  registerRetryCommand(program, getConfig);
  registerDemoCommand(program, getConfig);
  registerCheckCommand(program, getConfig, envFile);
  registerImportCommand(program, getConfig);
  registerReconcileCommand(program, getConfig);
  registerAbandonCommand(program, getConfig);
  registerDeliveriesCommand(program, getConfig);
  registerRedeliverCommand(program, getConfig);
  registerSandboxCommand(program, getConfig);
  program.addOption(new Option('--no-color').hideHelp());
  return program;
}
