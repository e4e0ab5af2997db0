// The one entry point. Each command is a small function over the composition root.
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, type Config, loadConfig } from './config.ts';
import { runMigrations } from './db/migrate.ts';
import { createRuntime, type Runtime } from './runtime.ts';
import { enqueueNdjson, openInput } from './commands/enqueue.ts';
import { countByState, findBatch, formatBatch, viewOf } from './commands/status.ts';
import { retryBatches } from './sync/retry.ts';
import { printHistory } from './commands/history.ts';
import { startWorkerProcess } from './commands/worker.ts';
import { runDemo } from './commands/demo.ts';
import { runCheck } from './commands/check.ts';
import { ImportFileError, runImport } from './commands/import.ts';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { registerSandboxCommand } from './sandbox/cli.ts';
import { registerReconcileCommand } from './reconcile/cli.ts';

export async function main(argv: string[]): Promise<void> {
  let program: Command;
  try {
    program = buildProgram(loadDotEnv());
  } catch (error) {
    process.exitCode = reportFatal(error);
    return;
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.exitCode = reportFatal(error);
  }
}

/**
 * Loads `.env` from the working directory, if there is one. Variables already in the environment
 * win, so a deployment can override any line of it. Returns the file's path when it was loaded.
 */
export function loadDotEnv(cwd = process.cwd()): string | undefined {
  const file = resolve(cwd, '.env');
  if (!existsSync(file)) return undefined;
  if (typeof process.loadEnvFile !== 'function') {
    throw new UsageError(`${file} exists, but Node.js ${process.version} cannot read .env files (20.12 or later can): upgrade Node.js, or export the variables instead.`);
  }
  process.loadEnvFile(file);
  return file;
}

function buildProgram(envFile: string | undefined): Command {
  const program = new Command('classroom-sync')
    .description('Keeps your batches in step with the remote classroom service: one class and join link per batch.')
    .showHelpAfterError();
  let config: Config | undefined;
  const getConfig = () => (config ??= loadConfig());

  program
    .command('migrate')
    .description('create the database if missing and apply migrations (safe to run twice)')
    .action(async () => {
      const { createdDatabase } = await runMigrations(getConfig().databaseUrl);
      console.log(createdDatabase ? 'database created; migrations applied' : 'migrations applied; database is up to date');
    });

  program
    .command('worker')
    .description('run sync jobs and serve the API, dashboard, /metrics and probes on PORT until SIGTERM/SIGINT (drains, then exits 0)')
    .option('--metrics-auth', 'require API_TOKEN on /metrics too (default: /metrics is open, like most exporters)')
    .action(async (opts: { metricsAuth?: boolean }) => {
      await startWorkerProcess(getConfig(), { metricsAuth: opts.metricsAuth === true });
    });

  program
    .command('enqueue')
    .argument('[file]', 'NDJSON file of batch-created events; stdin when absent or "-"')
    .description('record and enqueue batch-created events; invalid lines are reported and make the exit code 1')
    .action(async (file: string | undefined) => {
      await withRuntime(getConfig(), async (rt) => {
        const report = await enqueueNdjson(publishDeps(rt), openInput(file));
        for (const r of report.rejected) {
          console.error(`line ${r.line}: ${r.problems.map((p) => `${p.field} ${p.reason}`).join('; ')}`);
        }
        console.log(`accepted ${report.accepted} (${report.duplicates} already known), rejected ${report.rejected.length}`);
        if (report.rejected.length > 0) process.exitCode = 1;
      });
    });

  program
    .command('status')
    .argument('[batchId]', 'show one batch instead of counts by state')
    .option('--json', 'print JSON')
    .option('--institute <id>', 'institute of the batch (default CLASSROOM_INSTITUTE_ID)')
    .option('--show-link', 'print the full join link (it is a secret: anyone holding it can join)')
    .description('counts of batches by state, or one batch')
    .action(async (batchId: string | undefined, opts: { json?: boolean; institute?: string; showLink?: boolean }) => {
      await withRuntime(getConfig(), async (rt) => {
        if (!batchId) {
          const counts = await countByState(rt.database.db);
          console.log(opts.json ? JSON.stringify(counts) : Object.entries(counts).map(([s, n]) => `${s.padEnd(13)} ${n}`).join('\n'));
          return;
        }
        const row = await findBatch(rt.database.db, opts.institute ?? rt.config.classroom.instituteId, batchId);
        if (!row) {
          console.error(`batch ${batchId} is not known`);
          process.exitCode = 1;
          return;
        }
        const view = viewOf(row);
        console.log(opts.json ? JSON.stringify(view) : formatBatch(view, opts.showLink === true));
      });
    });

  program
    .command('history')
    .argument('<batchId>', 'the batch whose timeline to print')
    .option('--json', 'print JSON')
    .option('--institute <id>', 'institute of the batch (default CLASSROOM_INSTITUTE_ID)')
    .description("a batch's audit trail: every state transition and remote call, oldest first")
    .action(async (batchId: string, opts: { json?: boolean; institute?: string }) => {
      await withRuntime(getConfig(), async (rt) => {
        const found = await printHistory(rt.database.db, opts.institute ?? rt.config.classroom.instituteId, batchId, opts.json === true);
        if (!found) {
          console.error(`batch ${batchId} is not known`);
          process.exitCode = 1;
        }
      });
    });

  program
    .command('retry')
    .argument('[batchIds...]', 'batches to put back')
    .option('--failed', 'every batch in state failed')
    .option('--institute <id>', 'institute of the batches (default CLASSROOM_INSTITUTE_ID)')
    .description('put failed or needs_review batches back; they resume from their last safe step')
    .action(async (batchIds: string[], opts: { failed?: boolean; institute?: string }) => {
      if (!opts.failed && batchIds.length === 0) throw new UsageError('name at least one batch id, or pass --failed');
      await withRuntime(getConfig(), async (rt) => {
        const instituteId = opts.institute ?? rt.config.classroom.instituteId;
        const results = await retryBatches(
          { db: rt.database.db, queue: rt.queue },
          opts.failed ? { allFailed: true } : { keys: batchIds.map((batchId) => ({ instituteId, batchId })) },
        );
        for (const r of results) console.log(`${r.batchId}: ${r.from} → ${r.to}${r.queued ? ' (queued)' : ''}`);
        const missing = batchIds.filter((id) => !results.some((r) => r.batchId === id));
        for (const id of missing) console.error(`${id}: not known`);
        console.log(`${results.length} batch(es) put back`);
        if (missing.length) process.exitCode = 1;
      });
    });

  program
    .command('demo')
    .description('run the whole product against the built-in sandbox with sample batches')
    .option('--once', 'exit when the sample batches are done instead of serving until Ctrl-C')
    .option('--count <n>', 'how many sample batches', (v) => Number.parseInt(v, 10), 12)
    .option('--sandbox-port <port>', 'port of the built-in sandbox (0 = any free port)', (v) => Number.parseInt(v, 10), 0)
    .option('--fail-rate <p>', 'inject faults into this share of remote calls (0..1), to watch retries and the duplicate guard', parseProbability, 0)
    .option('--port <port>', 'port of the HTTP API, dashboard and metrics on 127.0.0.1 (default PORT; 0 = any free port)', (v) => Number.parseInt(v, 10))
    .option('--verbose', 'log at LOG_LEVEL (default: errors only, on stderr)')
    .action(async (opts: { once?: boolean; count: number; sandboxPort: number; port?: number; failRate: number; verbose?: boolean }) => {
      process.exitCode = await runDemo(getConfig(), {
        once: opts.once === true,
        count: opts.count,
        sandboxPort: opts.sandboxPort,
        ...(opts.port === undefined ? {} : { port: opts.port }),
        failRate: opts.failRate,
        verbose: opts.verbose === true,
      });
    });

  program
    .command('check')
    .description('verify PostgreSQL, Redis and the classroom credentials and headers with one harmless read; exit code 1 on any failure')
    .action(async () => {
      process.exitCode = await runCheck(getConfig(), { envFile });
    });

  program
    .command('import')
    .argument('<file>', 'FILE.csv (header batchId,name,subject[,instituteId][,more class fields]) or FILE.ndjson')
    .option('--format <format>', 'csv or ndjson (default: from the file name)')
    .description('back-fill existing batches from a file; rejected rows are listed and make the exit code 1')
    .action(async (file: string, opts: { format?: string }) => {
      await withRuntime(getConfig(), async (rt) => {
        process.exitCode = await runImport(publishDeps(rt), file, opts.format === undefined ? {} : { format: opts.format });
      });
    });

  registerReconcileCommand(program, getConfig);
  registerSandboxCommand(program, getConfig);
  program.addOption(new Option('--no-color').hideHelp());
  return program;
}

export function publishDeps(rt: Runtime) {
  return {
    db: rt.database.db,
    queue: rt.queue,
    logger: rt.logger,
    defaults: { instituteId: rt.config.classroom.instituteId, classNameTemplate: rt.config.classroom.classNameTemplate },
  };
}

async function withRuntime<T>(config: Config, fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const rt = createRuntime(config);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

class UsageError extends Error {}

function parseProbability(value: string): number {
  const p = Number(value);
  if (value.trim() === '' || !Number.isFinite(p) || p < 0 || p > 1) throw new InvalidArgumentError('must be a probability from 0 to 1');
  return p;
}

function reportFatal(error: unknown): number {
  if (error instanceof ImportFileError) {
    console.error(`cannot import: ${error.message}`);
    return 1;
  }
  if (error instanceof ConfigError || error instanceof UsageError) {
    console.error(error.message);
    return 2;
  }
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string })?.code;
  if (code === '42P01') {
    console.error('The database has no classroom-sync tables yet. Run `npx classroom-sync migrate` first.');
  } else if (code === 'ECONNREFUSED' || /ECONNREFUSED/.test(message)) {
    console.error(`${message}\nIs PostgreSQL/Redis running? Start them (e.g. \`docker compose up -d\`) or set DATABASE_URL / REDIS_URL.`);
  } else {
    console.error(message);
  }
  return 1;
}
