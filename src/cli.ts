// The one entry point. Each command is a small function over the composition root.
import { Command, Option } from 'commander';
import { ConfigError, type Config, loadConfig } from './config.ts';
import { runMigrations } from './db/migrate.ts';
import { createRuntime, type Runtime } from './runtime.ts';
import { enqueueNdjson, openInput } from './commands/enqueue.ts';
import { countByState, findBatch, formatBatch, viewOf } from './commands/status.ts';
import { retryBatches } from './sync/retry.ts';
import { startWorkerProcess } from './commands/worker.ts';
import { runDemo } from './commands/demo.ts';
import { registerSandboxCommand } from './sandbox/cli.ts';
import { registerReconcileCommand } from './reconcile/cli.ts';

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.exitCode = reportFatal(error);
  }
}

function buildProgram(): Command {
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
    .description('run sync jobs until SIGTERM/SIGINT (drains active jobs, then exits 0)')
    .action(async () => {
      await startWorkerProcess(getConfig());
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
    .action(async (opts: { once?: boolean; count: number; sandboxPort: number }) => {
      await runDemo(getConfig(), { once: opts.once === true, count: opts.count, sandboxPort: opts.sandboxPort });
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

function reportFatal(error: unknown): number {
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
