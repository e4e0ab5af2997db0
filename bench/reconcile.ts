// Reconciliation at scale: one pass over a listing of N classes (default 100,000) against N
// mappings, with some drift of every repairable and reported kind. Prints wall time, peak RSS
// (sampled every 5 ms) and database round trips, as one JSON line and a table, and writes its
// section of bench/RESULTS.md.
//
//   npm run bench:reconcile                 # 100,000 classes and mappings
//   npm run bench:reconcile -- --classes 20000
//
// The sandbox runs in a child process, so the figures are the reconciler's alone (the sandbox
// building and serialising a 100k-class listing does not count against its memory). Needs the same
// PostgreSQL and Redis as the tests (TEST_PG_SERVER / TEST_REDIS_URL); uses, then drops, a database
// and a queue prefix of its own.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { SANDBOX_DEFAULTS, loadConfig } from '../src/config/config.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { createLogger } from '../src/logging/logger.ts';
import { runReconciliation } from '../src/reconcile/run.ts';
import { reconcileOptionsOf } from '../src/reconcile/settings.ts';
import { reconcileDepsOf } from '../src/reconcile/setup.ts';
import { createRuntime } from '../src/runtime/runtime.ts';
import { sandboxOptionsFromConfig, startSandbox } from '../src/sandbox/index.ts';
import { type Machine, machineAtEnd, machineAtStart, publish } from './support/report.ts';
import { PG_SERVER, REDIS_URL, dropDatabase, dropQueueKeys } from '../test/helpers/harness.ts';

const DRIFT = 100; // per kind: deleted, hidden, orphan, stuck, link blanked locally

interface Seeded {
  url: string;
}

async function main(): Promise<void> {
  const n = Number(argValue('--classes') ?? 100_000);
  const machine = machineAtStart();
  const id = randomBytes(4).toString('hex');
  const databaseName = `classroom_sync_bench_${id}`;
  const base = {
    DATABASE_URL: `${PG_SERVER}/${databaseName}`,
    REDIS_URL,
    QUEUE_PREFIX: `cs-bench-${id}`,
    LOG_LEVEL: 'silent',
    // Link checks are rate-limited like any call; a high budget measures their work, not the spacing.
    CLASSROOM_RATE_LIMIT_PER_MINUTE: '600000',
  };
  const child = fork(fileURLToPath(import.meta.url), ['--sandbox-child', String(n)], { execArgv: ['--import', 'tsx'], env: { ...process.env, ...base } });
  try {
    const seeded = await new Promise<Seeded>((resolve, reject) => {
      child.once('message', (m) => resolve(m as Seeded));
      child.once('exit', (code) => reject(new Error(`sandbox child exited with ${code}`)));
    });
    const config = loadConfig({ ...base, CLASSROOM_BASE_URL: seeded.url });
    const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
    try {
      const queries = countQueries(runtime.database.pool);
      const result = await measure(() =>
        runReconciliation(reconcileDepsOf(runtime), { trigger: 'bench', ...reconcileOptionsOf(config), stuckAfterMs: 60_000, listLimit: 10 }),
      );
      print({ n, ...result, dbRoundTrips: queries() }, machine);
    } finally {
      await runtime.close();
    }
  } finally {
    child.kill('SIGTERM');
    await dropDatabase(databaseName);
    await dropQueueKeys(base.QUEUE_PREFIX);
  }
}

/**
 * The child: a sandbox with N classes (links enabled), N mappings in the database, and drift on both
 * sides. Seeding here keeps the seed data out of the measured process.
 */
async function sandboxChild(): Promise<void> {
  const n = Number(process.argv.at(-1));
  const config = loadConfig(process.env);
  await runMigrations(config.databaseUrl);
  const sandbox = await startSandbox(sandboxOptionsFromConfig(config));
  const institute = SANDBOX_DEFAULTS.CLASSROOM_INSTITUTE_ID;
  const classes: { id: string; name: string; link: string }[] = [];
  for (let i = 0; i < n; i++) {
    const created = sandbox.store.create({ name: `Bench class ${i}`, subject: 'Bench', instituteId: institute });
    classes.push({ id: created._id, name: created.name, link: sandbox.store.setJoinLink(created._id, true)!.joinMagicLink });
  }
  for (let i = 0; i < DRIFT; i++) {
    sandbox.store.delete(classes[i]!.id); // missing_remote
    sandbox.store.hide(classes[DRIFT + i]!.id); // hidden_remote
    sandbox.store.create({ name: `Nobody's class ${i}`, subject: 'Bench', instituteId: institute }); // orphan_remote
  }
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 1 });
  await insertMappings(pool, institute, classes);
  await pool.end();
  process.send!({ url: sandbox.url } satisfies Seeded);
  process.once('SIGTERM', () => void sandbox.close().then(() => process.exit(0)));
}

/** One INSERT … SELECT unnest(…) for all mappings, then the drift that lives in the database. */
async function insertMappings(pool: pg.Pool, instituteId: string, classes: { id: string; name: string; link: string }[]): Promise<void> {
  await pool.query(
    `insert into batch_classes (institute_id, batch_id, class_name, class_id, join_link, state, event, synced_at, class_created_at, link_enabled_at)
     select $1, 'bench-' || c.i, c.name, c.id, c.link, 'synced', '{}'::jsonb, now(), now() - interval '1 day', now()
       from unnest($2::text[], $3::text[], $4::text[]) with ordinality as c(id, name, link, i)`,
    [instituteId, classes.map((c) => c.id), classes.map((c) => c.name), classes.map((c) => c.link)],
  );
  const stuck = classes.slice(2 * DRIFT, 3 * DRIFT).map((c) => c.id);
  const blank = classes.slice(3 * DRIFT, 4 * DRIFT).map((c) => c.id);
  await pool.query(`update batch_classes set state = 'link_enabled', updated_at = now() - interval '1 hour' where class_id = any($1)`, [stuck]);
  await pool.query(`update batch_classes set join_link = null where class_id = any($1)`, [blank]);
}

async function measure<T extends { counts: object; repairs: object; ok: boolean; phasesMs: Record<string, number> }>(run: () => Promise<T>) {
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const started = performance.now();
  const report = await run();
  const wallMs = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  return {
    wallMs: Math.round(wallMs),
    peakRssMb: mb(peak),
    baselineRssMb: mb(baseline),
    ok: report.ok,
    phasesMs: report.phasesMs,
    counts: report.counts,
    repairs: report.repairs,
  };
}

/** Counts statements sent through the pool (drizzle uses pool.query); the query still runs for real. */
function countQueries(pool: pg.Pool): () => number {
  let count = 0;
  const original = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    count += 1;
    return original(...args);
  };
  return () => count;
}

function print(
  result: {
    n: number;
    wallMs: number;
    peakRssMb: number;
    baselineRssMb: number;
    dbRoundTrips: number;
    ok: boolean;
    phasesMs: Record<string, number>;
    counts: object;
    repairs: object;
  },
  machine: Machine,
) {
  const { n, ...figures } = result;
  const list = (o: object) =>
    Object.entries(o)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
  publish({
    bench: 'reconcile',
    title: 'Reconciliation (`bench/reconcile.ts`)',
    command: `npm run bench:reconcile -- --classes ${n}`,
    machine: machineAtEnd(machine),
    figures: { classes: n, mappings: n, ...figures },
    rows: [
      { figure: 'listed classes / mappings', value: `${n.toLocaleString('en')} / ${n.toLocaleString('en')}` },
      { figure: 'wall time of one pass', value: `${(result.wallMs / 1000).toFixed(2)} s`, goal: '≤ 3 s', met: result.wallMs <= 3_000 },
      { figure: 'peak RSS', value: `${result.peakRssMb} MB (${result.baselineRssMb} MB before the pass)`, goal: '≤ 300 MB', met: result.peakRssMb <= 300 },
      { figure: 'database round trips', value: String(result.dbRoundTrips) },
      { figure: 'phases (ms)', value: list(result.phasesMs) },
      { figure: 'counts', value: list(result.counts) },
      { figure: 'repairs', value: list(result.repairs) },
    ],
    notes: [
      `One \`runReconciliation\` pass in this process over a listing of ${n.toLocaleString('en')} classes (the sandbox, seeded in its own process) against ${n.toLocaleString('en')} mappings, with ${DRIFT} of each drift kind (deleted, hidden, orphan, stuck, link blanked locally). Peak RSS sampled every 5 ms.`,
    ],
  });
}

function mb(bytes: number): number {
  return Math.round(bytes / 1024 / 1024);
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (process.argv.includes('--sandbox-child')) await sandboxChild();
else await main();
