// The fault suite: several worker processes sync N batches while the sandbox injects a seeded mix
// of faults, workers are SIGKILLed (some right after an add-class is sent), Redis restarts empty
// and Postgres drops every connection. Afterwards the sandbox's ground truth must show exactly one
// class per batch and every join link stored.
import { randomBytes } from 'node:crypto';
import { writeFileSync, mkdirSync } from 'node:fs';
import { count, eq } from 'drizzle-orm';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { runMigrations } from '../../src/db/migrate.ts';
import { batchClasses } from '../../src/db/schema/index.ts';
import { publishBatches } from '../../src/events/publish.ts';
import { createLogger } from '../../src/logger.ts';
import { createRuntime } from '../../src/runtime.ts';
import { mixedFaultRates, sandboxOptionsFromConfig, startSandbox } from '../../src/sandbox/index.ts';
import { mulberry32 } from '../../src/sandbox/random.ts';
import { PG_SERVER, dropDatabase } from '../helpers/harness.ts';
import { PrivateRedis, WorkerProcess, type WorkerLine, freePort } from './processes.ts';

export interface ChaosOptions {
  n: number;
  workers: number;
  kills: number;
  seed: number;
  /** Share of remote calls that get a fault. */
  faultRate: number;
  timeoutMs: number;
}

export interface ChaosReport {
  seed: number;
  n: number;
  workers: number;
  synced: number;
  needsReview: { batchId: string; reason: string }[];
  failed: number;
  lost: number;
  duplicates: number;
  remoteClasses: number;
  joinLinksMatching: number;
  addClassPosts: number;
  faultsInjected: Record<string, number>;
  outcomeUnknown: { addClassErrors: number; resolutions: Record<string, number> };
  retriesPerBatch: { mean: number; max: number; histogram: Record<string, number> };
  kills: { single: number; fleetAfterAddClass: number; processesKilled: number };
  /** Worker processes that exited without being killed or stopped by the suite. */
  crashes: { count: number; samples: string[] };
  redisRestarts: number;
  postgresConnectionsCut: number;
  timeToSyncedMs: { p50: number; p95: number; max: number };
  wallMs: number;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const random = mulberry32(options.seed);
  const id = randomBytes(4).toString('hex');
  const databaseName = `classroom_sync_chaos_${id}`;
  const redis = new PrivateRedis(await freePort());
  await redis.start();
  const env: Record<string, string> = {
    DATABASE_URL: `${PG_SERVER}/${databaseName}`,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `chaos-${id}`,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    PORT: '0',
    API_TOKEN: randomBytes(16).toString('hex'),
    SYNC_CONCURRENCY: '4',
    SYNC_ATTEMPTS: '40',
    SYNC_BACKOFF_BASE: '25ms',
    SYNC_BACKOFF_MAX: '400ms',
    CLASSROOM_TIMEOUT: '1s',
    SYNC_LEASE: '3s',
    SYNC_JOB_LOCK: '1500ms',
    SYNC_SETTLE: '300ms',
    SYNC_SWEEP_EVERY: '1s',
    SYNC_STUCK_AFTER: '2s',
    SHUTDOWN_GRACE: '5s',
    CLASSROOM_RATE_LIMIT_PER_MINUTE: '600000',
    RECONCILE_EVERY: '1h',
  };
  const sandbox = await startSandbox({
    ...sandboxOptionsFromConfig(loadConfig(env)),
    seed: options.seed,
    faults: { rates: mixedFaultRates(options.faultRate), latencyMs: 10, latencyJitterMs: 50, listingDelayMs: 100, hangMs: 3_000, retryAfterSeconds: 0 },
  });
  env.CLASSROOM_BASE_URL = sandbox.url;
  const config = loadConfig(env);
  await runMigrations(config.databaseUrl);
  const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });

  const lines: WorkerLine[] = [];
  const workers: WorkerProcess[] = [];
  const spawnWorker = () => workers.push(new WorkerProcess(env, (line) => lines.push(line)));
  for (let i = 0; i < options.workers; i++) spawnWorker();
  const alive = () => workers.filter((w) => w.alive);
  const kills = { single: 0, fleetAfterAddClass: 0, processesKilled: 0 };
  let redisRestarts = 0;
  let postgresConnectionsCut = 0;
  const respawn = () => {
    while (alive().length < options.workers) spawnWorker();
  };

  try {
    const events = Array.from({ length: options.n }, (_, i) => ({ batchId: `chaos-${i}`, name: `Chaos batch ${i}`, subject: 'Physics' }));
    const outcomes = await publishBatches(
      { db: runtime.database.db, queue: runtime.queue, logger: runtime.logger, defaults: { instituteId: config.classroom.instituteId, classNameTemplate: config.classroom.classNameTemplate } },
      events,
    );
    if (!outcomes.every((o) => o.ok)) throw new Error('the suite published an invalid event');
    // Each disruption waits for its share of progress, so every one meets work in flight.
    for (const action of chaosPlan(options, random)) {
      await waitForProgress(runtime, Math.floor(action.progress * options.n), respawn);
      await sleep(action.delayMs);
      if (action.kind === 'single') {
        const victims = alive();
        const victim = victims[Math.floor(random() * victims.length)];
        if (victim) {
          victim.kill9();
          kills.single += 1;
          kills.processesKilled += 1;
        }
        respawn();
      } else if (action.kind === 'fleet') {
        // Kill every worker the moment the next add-class reaches the remote: the class is
        // stored, the response has nobody to go to.
        kills.processesKilled += await killFleetOnNextAddClass(sandbox, alive);
        kills.fleetAfterAddClass += 1;
        respawn();
      } else if (action.kind === 'redis') {
        await redis.restartEmpty();
        redisRestarts += 1;
      } else {
        postgresConnectionsCut += await cutPostgres(databaseName);
        await sleep(300);
        postgresConnectionsCut += await cutPostgres(databaseName);
      }
    }
    // Heal: no more faults; wait for every batch to come to rest.
    sandbox.faults.clear();
    respawn();
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      const rows = await runtime.database.db.select({ state: batchClasses.state }).from(batchClasses);
      if (rows.length === options.n && rows.every((r) => r.state === 'synced' || r.state === 'needs_review' || r.state === 'failed')) break;
      if (Date.now() > deadline) break;
      respawn();
      await sleep(200);
    }
    await Promise.all(workers.map((w) => w.stop()));
    const crashed = workers.filter((w) => !w.stoppedByUs);
    const crashes = { count: crashed.length, samples: crashed.slice(0, 3).map((w) => w.stderrTail) };
    return await buildReport({
      crashes, options, runtime, sandbox, lines, kills, redisRestarts, postgresConnectionsCut, started });
  } finally {
    for (const w of workers) w.kill9();
    await runtime.close();
    await sandbox.close();
    await redis.kill();
    await dropDatabase(databaseName);
  }
}

type Action = { progress: number; delayMs: number; kind: 'single' | 'fleet' | 'redis' | 'postgres' };

/**
 * Kills spread over the run (half of them whole-fleet kills right after an add-class), one Redis
 * restart at 40 % and one Postgres cut at 70 %, each with a seeded jitter.
 */
function chaosPlan(options: ChaosOptions, random: () => number): Action[] {
  const plan: Action[] = [];
  for (let k = 0; k < options.kills; k++) {
    plan.push({ progress: (0.8 * k) / options.kills, delayMs: Math.floor(random() * 200), kind: k % 2 === 0 ? 'single' : 'fleet' });
  }
  plan.push({ progress: 0.4, delayMs: Math.floor(random() * 200), kind: 'redis' });
  plan.push({ progress: 0.7, delayMs: Math.floor(random() * 200), kind: 'postgres' });
  return plan.sort((a, b) => a.progress - b.progress);
}

/** Waits until `synced` batches are done, keeping the fleet at strength; fails if progress stops. */
async function waitForProgress(runtime: ReturnType<typeof createRuntime>, synced: number, respawn: () => void): Promise<void> {
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const [row] = await runtime.database.db.select({ n: count() }).from(batchClasses).where(eq(batchClasses.state, 'synced'));
    const done = Number(row?.n ?? 0);
    if (done >= synced) return;
    if (done !== last) {
      last = done;
      lastChange = Date.now();
    } else if (Date.now() - lastChange > 90_000) {
      const states = await runtime.database.db.select({ state: batchClasses.state, n: count() }).from(batchClasses).groupBy(batchClasses.state);
      throw new Error(`no progress for 90 s at ${done}/${synced} synced; states ${JSON.stringify(states)}`);
    }
    respawn();
    await sleep(100);
  }
}

async function killFleetOnNextAddClass(sandbox: Awaited<ReturnType<typeof startSandbox>>, alive: () => WorkerProcess[]): Promise<number> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish(), 5_000);
    const finish = () => {
      clearTimeout(timer);
      unsubscribe();
      const victims = alive();
      for (const w of victims) w.kill9();
      resolve(victims.length);
    };
    const unsubscribe = sandbox.onRequest((operation) => {
      if (operation === 'addClass') finish();
    });
  });
}

async function cutPostgres(databaseName: string): Promise<number> {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await client.connect();
  try {
    const result = await client.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [databaseName]);
    return result.rowCount ?? 0;
  } finally {
    await client.end();
  }
}

interface ReportInput {
  crashes: ChaosReport['crashes'];
  options: ChaosOptions;
  runtime: ReturnType<typeof createRuntime>;
  sandbox: Awaited<ReturnType<typeof startSandbox>>;
  lines: WorkerLine[];
  kills: ChaosReport['kills'];
  redisRestarts: number;
  postgresConnectionsCut: number;
  started: number;
}

async function buildReport(input: ReportInput): Promise<ChaosReport> {
  const { options, runtime, sandbox, lines } = input;
  const rows = await runtime.database.db.select().from(batchClasses);
  const truth = sandbox.state();
  const byId = new Map(truth.classes!.map((c) => [c.id, c]));
  const synced = rows.filter((r) => r.state === 'synced');
  const resolutions: Record<string, number> = {};
  let addClassErrors = 0;
  for (const line of lines) {
    if (line.msg?.startsWith('resolved an add-class') && line.decision) resolutions[line.decision] = (resolutions[line.decision] ?? 0) + 1;
    if (line.err?.kind === 'outcome_unknown' && line.err.operation === 'addClass') addClassErrors += 1;
  }
  const attempts = rows.map((r) => r.attempts);
  const histogram: Record<string, number> = {};
  for (const a of attempts) histogram[String(a)] = (histogram[String(a)] ?? 0) + 1;
  const times = synced.map((r) => r.syncedAt!.getTime() - r.receivedAt.getTime()).sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))] ?? 0;
  const ours = Object.entries(truth.byName).filter(([name]) => name.startsWith('Chaos batch '));
  return {
    seed: options.seed,
    n: options.n,
    workers: options.workers,
    synced: synced.length,
    needsReview: rows.filter((r) => r.state === 'needs_review').map((r) => ({ batchId: r.batchId, reason: r.lastError ?? '' })),
    failed: rows.filter((r) => r.state === 'failed').length,
    lost: options.n - rows.filter((r) => r.state === 'synced' || r.state === 'needs_review').length,
    duplicates: ours.reduce((sum, [, count]) => sum + Math.max(0, count - 1), 0),
    remoteClasses: ours.reduce((sum, [, count]) => sum + count, 0),
    joinLinksMatching: synced.filter((r) => r.joinLink && byId.get(r.classId!)?.joinMagicLink === r.joinLink).length,
    addClassPosts: truth.calls.byOperation.addClass?.calls ?? 0,
    faultsInjected: truth.calls.faultsInjected,
    outcomeUnknown: { addClassErrors, resolutions },
    retriesPerBatch: {
      mean: Number((attempts.reduce((a, b) => a + b, 0) / Math.max(1, attempts.length) - 1).toFixed(2)),
      max: Math.max(0, ...attempts) - 1,
      histogram,
    },
    kills: input.kills,
    crashes: input.crashes,
    redisRestarts: input.redisRestarts,
    postgresConnectionsCut: input.postgresConnectionsCut,
    timeToSyncedMs: { p50: pct(0.5), p95: pct(0.95), max: times[times.length - 1] ?? 0 },
    wallMs: Date.now() - input.started,
  };
}

export function printReport(report: ChaosReport, file = 'test-results/fault-report.json'): void {
  mkdirSync('test-results', { recursive: true });
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  const rows: [string, string][] = [
    ['seed', String(report.seed)],
    ['batches (N) / worker processes', `${report.n} / ${report.workers}`],
    ['synced / needs_review / failed / lost', `${report.synced} / ${report.needsReview.length} / ${report.failed} / ${report.lost}`],
    ['remote classes / duplicates', `${report.remoteClasses} / ${report.duplicates}`],
    ['join links stored and equal to get-class', String(report.joinLinksMatching)],
    ['add-class POSTs sent', String(report.addClassPosts)],
    ['add-class outcome unknown (errors seen)', String(report.outcomeUnknown.addClassErrors)],
    ['… resolved by reading', JSON.stringify(report.outcomeUnknown.resolutions)],
    ['faults injected', JSON.stringify(report.faultsInjected)],
    ['retries per batch: mean / max', `${report.retriesPerBatch.mean} / ${report.retriesPerBatch.max}`],
    ['SIGKILLs: single / fleet-after-add-class / processes', `${report.kills.single} / ${report.kills.fleetAfterAddClass} / ${report.kills.processesKilled}`],
    ['worker crashes (exits not caused by the suite)', String(report.crashes.count)],
    ['Redis restarts (data lost) / Postgres connections cut', `${report.redisRestarts} / ${report.postgresConnectionsCut}`],
    ['time to synced p50 / p95 / max (ms)', `${report.timeToSyncedMs.p50} / ${report.timeToSyncedMs.p95} / ${report.timeToSyncedMs.max}`],
    ['wall time (s)', (report.wallMs / 1000).toFixed(1)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(['fault suite report', ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join('\n'));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
