// `npm start` / `classroom-sync demo`: the whole product against the built-in sandbox in one
// command: migrations, sandbox, worker, sample batches, and the resulting mappings.
import { inArray } from 'drizzle-orm';
import { loadConfig, type Config } from '../config.ts';
import { runMigrations } from '../db/migrate.ts';
import { TERMINAL_STATES, batchClasses } from '../db/schema/index.ts';
import { publishBatches } from '../events/publish.ts';
import { maskJoinLink } from '../logger.ts';
import { createRuntime } from '../runtime.ts';
import { sandboxOptionsFromConfig, startSandbox } from '../sandbox/index.ts';
import { createSyncWorker } from '../sync/worker.ts';

export interface DemoOptions {
  count: number;
  once: boolean;
  sandboxPort: number;
}

const SUBJECTS = ['Mathematics', 'Physics', 'Chemistry', 'Biology', 'History', 'Literature'];

export async function runDemo(baseConfig: Config, options: DemoOptions, out: (line: string) => void = console.log): Promise<void> {
  await runMigrations(baseConfig.databaseUrl);
  const sandbox = await startSandbox(sandboxOptionsFromConfig(baseConfig), { port: options.sandboxPort });
  const config = loadConfig({ ...process.env, CLASSROOM_BASE_URL: sandbox.url, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
  const runtime = createRuntime(config);
  const worker = createSyncWorker(runtime);
  out(`sandbox listening on ${sandbox.url}`);
  try {
    const runId = Date.now().toString(36);
    const events = Array.from({ length: options.count }, (_, i) => ({
      batchId: `demo-${runId}-${String(i + 1).padStart(3, '0')}`,
      name: `Demo batch ${i + 1} (${runId})`,
      subject: SUBJECTS[i % SUBJECTS.length]!,
    }));
    const outcomes = await publishBatches(
      { db: runtime.database.db, queue: runtime.queue, logger: runtime.logger, defaults: { instituteId: config.classroom.instituteId, classNameTemplate: config.classroom.classNameTemplate } },
      events,
    );
    out(`published ${outcomes.filter((o) => o.ok).length} batch-created events`);
    const ids = events.map((e) => e.batchId);
    const started = Date.now();
    let rows = await readRows(runtime, ids);
    while (rows.some((r) => !TERMINAL_STATES.includes(r.state))) {
      await new Promise((r) => setTimeout(r, 200));
      rows = await readRows(runtime, ids);
      const done = rows.filter((r) => TERMINAL_STATES.includes(r.state)).length;
      if (process.stdout.isTTY) process.stdout.write(`\rsynced ${done}/${ids.length}`);
    }
    if (process.stdout.isTTY) process.stdout.write('\n');
    out(`all ${rows.length} batches finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    out(['batch', 'state', 'class id', 'join link (masked)'].join('\t'));
    for (const r of rows.sort((a, b) => a.batchId.localeCompare(b.batchId))) {
      out([r.batchId, r.state, r.classId ?? '-', maskJoinLink(r.joinLink) ?? '-'].join('\t'));
    }
    out(`remote classes on the sandbox: ${sandbox.state({ classes: false }).classCount}`);
    if (!options.once) {
      out('serving until Ctrl-C (publish more with `npx classroom-sync enqueue`)');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
    }
  } finally {
    await worker.close(5_000);
    await runtime.close();
    await sandbox.close();
  }
}

async function readRows(runtime: ReturnType<typeof createRuntime>, ids: string[]) {
  return runtime.database.db.select().from(batchClasses).where(inArray(batchClasses.batchId, ids));
}
