// The fault suite: several worker processes sync N batches while the sandbox injects a seeded mix
// of faults, workers are SIGKILLed (some right after an add-class is sent), Redis restarts empty,
// Postgres drops every connection, and Postgres restarts (down for a moment: every connection dies,
// new ones are refused). Afterwards the sandbox's ground truth must show exactly one class per batch
// and every join link stored.
//
// Meanwhile about a third of the batches change (changes.ts): renamed, given a new subject or room,
// cancelled, reopened, at random moments of their life (before add-class, while it is in doubt, after
// a fleet kill, once synced), with stale versions mixed in. Every class carries its batch's id as the
// extra field `chaosRef`, so classes are counted per batch whatever their name. At rest, no cancelled
// batch may have a visible class, every other one's class must carry its newest name, subject and
// room, and every row must stand at the highest version published for it.
//
// The run has a PostgreSQL server and a Redis of its own (processes.ts): restarting them must not
// touch the machine's shared servers, which other tests use.
//
// A third of the batches are published as history (the backfill lane, with its own queue and
// workers), so lanes are in use throughout.
//
// The batches belong to several institutes, each served by an account of its own (own credentials,
// which the sandbox checks per institute), so every account's rate limit and breaker are in use.
//
// The live-service mode adds what a hosted API does beyond the spec: it rewrites names (whitespace,
// case, cut to 28 characters), its reads lag its writes (up to 500 ms), and keys are refused twice
// for three seconds (first one account's key with 401, then every key with 403).
//
// For the doubt rule (doubt-run.ts): the remote refuses some add-class, edit-class and listing calls,
// once refuses every listing until batches in doubt run out of attempts, and has classes deleted
// behind the product's back; an operator retries, abandons and undoes at random moments, and in the
// heal phase retries every held batch and undoes every abandon not left on purpose. Every add-class,
// edit-class and get-class must arrive while its batch holds a live lease, and each batch's newest
// webhook must tell the state it rests in.
import { randomBytes } from 'node:crypto';
import { writeFileSync, mkdirSync } from 'node:fs';
import { asc, count, eq, inArray } from 'drizzle-orm';
import pg from 'pg';
import { loadConfig } from '../../src/config/config.ts';
import { createDatabase } from '../../src/db/client.ts';
import { runMigrations } from '../../src/db/migrate.ts';
import { batchClasses, batchEvents } from '../../src/db/schema/index.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createRuntime } from '../../src/runtime/runtime.ts';
import { type ClassTruth, mixedFaultRates, sandboxOptionsFromConfig, startSandbox } from '../../src/sandbox/index.ts';
import { mulberry32 } from '../../src/sandbox/random.ts';
import { instituteOf, writeAccountsFile } from '../helpers/accounts.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { ChangeDriver, type ChangeFigures, type CreatedEvent, type Expected, trace } from './changes.ts';
import { type DoubtFigures, DoubtDrivers } from './doubt-run.ts';
import { doubtNamed, doubtRows, doubtSamples } from './doubt-report.ts';
import type { HealFigures } from './heal.ts';
import { LeaseAuditor } from './lease-audit.ts';
import { PrivatePostgres, PrivateRedis, WorkerProcess, type WorkerLine, freePort } from './processes.ts';
import { type ListingWindowFigures, listingWindow, refusalRates, refuseKey } from './refusals.ts';
import { type ChangeChecks, classesByRef, duplicatesOf } from './rest-checks.ts';
import { Standbys } from './standbys.ts';

export type { ChangeChecks } from './rest-checks.ts';

export interface ChaosOptions {
  n: number;
  workers: number;
  kills: number;
  seed: number;
  /** Share of remote calls that get a fault. */
  faultRate: number;
  timeoutMs: number;
  /** Also rewrite names, lag reads and refuse the key for a while. */
  live: boolean;
  /** Accounts (each with one institute) the batches are spread over; 1 = no accounts file. */
  accounts: number;
}

export interface ChaosReport {
  seed: number;
  live: boolean;
  /** Remote calls made with each account's key (the sandbox's count per key). */
  callsPerAccount: Record<string, number>;
  /** Live mode: windows in which the key was refused, and how often a worker opened the breaker. */
  keyRefusals: { windows: number; refusedCalls: number; breakerOpened: number };
  n: number;
  workers: number;
  synced: number;
  needsReview: { batchId: string; reason: string }[];
  failed: number;
  /** The first few failed batches and why: what to look at when `failed` is not 0. */
  failedSamples: { batchId: string; attempts: number; kind: string | null; error: string | null }[];
  /** Batches that ended `cancelled` (their last event a cancel). */
  cancelled: number;
  lost: number;
  /** Classes beyond the first of any batch (counted by the `chaosRef` each class carries; deleted ones too). */
  duplicates: number;
  remoteClasses: number;
  /** Classes on the remote without a `chaosRef`: none may escape the count per batch. */
  unattributedClasses: number;
  /** Rows holding a class id: with needs_review evidence, the most classes the remote may hold. */
  rowsWithClass: number;
  /** What the change driver published, and when it landed. */
  changes: ChangeFigures;
  /**
   * Clients of the change driver's pool still checked out once it stopped publishing: each a
   * transaction of intake (applyChange) that never gave its connection back.
   */
  intakeClientsLeaked: number;
  /**
   * From the batches' histories: changes recorded while the batch was `creating` (its add-class sent
   * or about to be), and those of them whose add-class got no answer (outcome unknown, or its worker killed).
   */
  changesDuringAddClass: { recorded: number; answerLost: number };
  /** Each names the batches at fault (first few) and is empty when the run is right. */
  checks: ChangeChecks;
  /**
   * The first few batches a check names: their row, the classes carrying their ref, their history
   * (batch_events, one line each) and the workers' log lines about them. Written to the report file, not printed.
   */
  offenders: Record<string, { row: Record<string, unknown>; classes: ClassTruth[]; history: string[]; workerLog: string[] }>;
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
  /** Times the (private) PostgreSQL server was stopped and started again mid-run. */
  postgresRestarts: number;
  /**
   * From the server accepting connections again to the first batch state change recorded after it,
   * both in the database's clock (null when no batch changed state after the restart).
   */
  postgresBackAfterRestartMs: number | null;
  /**
   * Workers that were still starting when PostgreSQL went down and exited saying they cannot reach
   * it, as they should (not crashes: the suite, their supervisor, starts others).
   */
  workersRefusedAtStart: number;
  timeToSyncedMs: { p50: number; p95: number; max: number };
  wallMs: number;
  /** Refusals, deletions, the operator, the heal phase, the lease audit and the webhooks' last word. */
  doubt: DoubtFigures;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const random = mulberry32(options.seed);
  const id = randomBytes(4).toString('hex');
  const databaseName = `classroom_sync_chaos_${id}`;
  const postgres = new PrivatePostgres(await freePort());
  const redis = new PrivateRedis(await freePort());
  const env: Record<string, string> = {
    DATABASE_URL: `${postgres.url}/${databaseName}`,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `chaos-${id}`,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    PORT: '0',
    API_TOKEN: randomBytes(16).toString('hex'),
    SYNC_CONCURRENCY: '4',
    // Batches need 5 at most (retries per batch, outside the window of refused listings: ≤ 4 at
    // N = 200, ≤ 6 at N = 1,000); outages use none. The window lasts until a batch in doubt has used
    // them all, about half a second each, and the backfill waits meanwhile: 20, not more.
    SYNC_ATTEMPTS: '20',
    SYNC_BACKOFF_BASE: '25ms',
    SYNC_BACKOFF_MAX: '400ms',
    CLASSROOM_TIMEOUT: '1s',
    SYNC_LEASE: '3s',
    SYNC_JOB_LOCK: '1500ms',
    SYNC_SETTLE: '300ms',
    // A 429 without Retry-After pauses the whole fleet this long. The suite tests the guarantee, not
    // the pause: at the 15 s default, a run's ~20 such 429s leave the fleet idle most of the time.
    CLASSROOM_THROTTLE_PAUSE: '1s',
    // Twice the sandbox's lag in live mode; a read that lags longer still waits (10 × this) rather
    // than fail a batch or make a second class.
    SYNC_READ_LAG: '1s',
    CLASSROOM_KEY_PROBE_EVERY: '500ms',
    SYNC_SWEEP_EVERY: '1s',
    SYNC_STUCK_AFTER: '2s',
    SHUTDOWN_GRACE: '5s',
    CLASSROOM_RATE_LIMIT_PER_MINUTE: '600000',
    RECONCILE_EVERY: '1h',
  };
  const accounts = options.accounts > 1 ? chaosAccounts(options.accounts) : undefined;
  if (accounts) env.CLASSROOM_ACCOUNTS_FILE = accounts.file.path;
  let sandbox: Awaited<ReturnType<typeof startSandbox>> | undefined;
  let runtime: ReturnType<typeof createRuntime> | undefined;
  const workers: WorkerProcess[] = [];
  // As many ready to take over as the fleet has: after a fleet kill, a new fleet runs within a
  // second instead of loading its modules for several while no worker runs. Made now, they load
  // while the servers start; taken, they run with the environment as it is then.
  const standbys = new Standbys(env, { ready: options.workers });
  const beforeCleanup: (() => Promise<void>)[] = [];
  // Whatever fails, the workers, the servers, the sandbox and the accounts file go. A failed run
  // reports its own error; a cleanup that fails is printed, and fails a run that did not.
  let report: ChaosReport;
  const cleanupErrors: unknown[] = [];
  try {
    await postgres.start();
    await redis.start();
    sandbox = await startSandbox({
      ...sandboxOptionsFromConfig(loadConfig(env)),
      seed: options.seed,
      faults: {
        rates: mixedFaultRates(options.faultRate),
        perOperation: refusalRates(options.faultRate),
        latencyMs: 10,
        latencyJitterMs: 50,
        listingDelayMs: 100,
        hangMs: 3_000,
        retryAfterSeconds: 0,
        ...(options.live ? LIVE_BEHAVIOURS : {}),
      },
    });
    env.CLASSROOM_BASE_URL = sandbox.url;
    const config = loadConfig(env);
    // Creates the database on the private server, then its tables.
    await runMigrations(config.databaseUrl);
    await LeaseAuditor.install(config.databaseUrl);
    runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
    trace('servers and sandbox up; starting the run');
    report = await chaosRun({ options, random, env, postgres, redis, sandbox, runtime, workers, standbys, beforeCleanup, accounts, databaseName, started });
  } finally {
    const attempt = async (what: string, step: () => Promise<unknown> | unknown) => {
      trace(`cleanup: ${what}`);
      try {
        await step();
      } catch (error) {
        cleanupErrors.push(error);
        console.error(`fault suite cleanup failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    };
    for (const step of beforeCleanup) await attempt('the change driver', step);
    for (const w of workers) w.kill9();
    await attempt('the standby workers', () => standbys.close());
    await attempt('the runtime', () => runtime?.close());
    await attempt('the sandbox', () => sandbox?.close());
    await attempt('Redis', () => redis.kill());
    // Removes the database with the server: nothing of the run is left on the machine's shared one.
    await attempt('PostgreSQL', () => postgres.destroy());
    await attempt('the accounts file', () => accounts?.file.remove());
  }
  if (cleanupErrors.length) throw cleanupErrors[0];
  return report;
}

interface RunInput {
  options: ChaosOptions;
  random: () => number;
  env: Record<string, string>;
  postgres: PrivatePostgres;
  redis: PrivateRedis;
  sandbox: Awaited<ReturnType<typeof startSandbox>>;
  runtime: ReturnType<typeof createRuntime>;
  /** Filled as workers are spawned, so the caller can kill every one of them, whatever happens. */
  workers: WorkerProcess[];
  /** Where new workers come from. */
  standbys: Standbys;
  /** What the caller runs first when the run ends, whatever happens (the change driver's stop). */
  beforeCleanup: (() => Promise<void>)[];
  accounts: ReturnType<typeof chaosAccounts> | undefined;
  databaseName: string;
  started: number;
}

/** The run itself, on servers and a sandbox that `runChaos` started and will remove. */
async function chaosRun(input: RunInput): Promise<ChaosReport> {
  const { options, random, env, postgres, redis, sandbox, runtime, workers, standbys, accounts, databaseName } = input;
  const lines: WorkerLine[] = [];
  const doubt = new DoubtDrivers(runtime, sandbox, options.seed);
  doubt.listen();
  let listingFigures: ListingWindowFigures = { lastedMs: 0, exhausted: 0, closedBy: 'never', lostAnswer: undefined };
  // The listing window runs beside the plan (kills, restarts, key windows).
  let listingDone: Promise<void> = Promise.resolve();
  const spawnWorker = () => workers.push(new WorkerProcess(env, (line) => lines.push(line), standbys));
  for (let i = 0; i < options.workers; i++) spawnWorker();
  const alive = () => workers.filter((w) => w.alive);
  const kills = { single: 0, fleetAfterAddClass: 0, processesKilled: 0 };
  let redisRestarts = 0;
  let postgresConnectionsCut = 0;
  let postgresRestarts = 0;
  /** When the suite had PostgreSQL down (epoch ms). */
  const postgresDown: { from: number; to: number }[] = [];
  /** `now()` on the server right after the restart, as text (microseconds kept). */
  let postgresBackAt: string | undefined;
  let keyWindows = 0;
  const respawn = () => {
    while (alive().length < options.workers) spawnWorker();
  };

  // Each class carries its batch's id (an extra class field): a rename changes its name, not that.
  // Three batches in four are created at version 1, the fourth without a version.
  const events: CreatedEvent[] = Array.from({ length: options.n }, (_, i) => ({
    batchId: `chaos-${i}`,
    name: batchName(i, options.live),
    subject: 'Physics',
    ...(accounts ? { instituteId: instituteOf(accounts.names[i % accounts.names.length]!) } : {}),
    chaosRef: `chaos-${i}`,
    ...(i % 4 === 3 ? {} : { version: 1 }),
  }));
  // Lanes in use: every third batch is history (the backfill lane, its own queue and workers).
  const deps = publishDepsOf(runtime);
  const outcomes = [
    ...(await publishBatches(
      deps,
      events.filter((_, i) => i % 3 !== 2),
    )),
    ...(await publishBatches(
      deps,
      events.filter((_, i) => i % 3 === 2),
      { lane: 'backfill' },
    )),
  ];
  if (!outcomes.every((o) => o.ok)) throw new Error('the suite published an invalid event');
  let lastFleetKill: number | undefined;
  // The changes go through a pool of their own: intake's transactions meet the Postgres cut and
  // restart, and a client one of them leaves checked out (see intakeClientsLeaked) must not keep the
  // runtime's pool from closing.
  const changeDatabase = createDatabase(env.DATABASE_URL!, { applicationName: 'classroom-sync-chaos-changes' });
  const changes = new ChangeDriver({
    seed: options.seed,
    created: events,
    deps: { ...deps, db: changeDatabase.db },
    db: changeDatabase.db,
    sandbox,
    lastFleetKill: () => lastFleetKill,
  });
  changes.start();
  await doubt.start();
  input.beforeCleanup.push(() => doubt.stop());
  // Whatever happens, the driver stops publishing and its pool is closed before the runtime is.
  input.beforeCleanup.push(async () => {
    await changes.stop();
    // A leaked client is never released, and ending a pool waits for every client: bounded.
    await Promise.race([changeDatabase.close(), sleep(2_000)]);
  });
  // Each disruption waits for its share of progress, so every one meets work in flight.
  for (const action of chaosPlan(options, random)) {
    trace(`waiting for ${Math.floor(action.progress * options.n)} done, then ${action.kind}`);
    await waitForProgress(runtime, Math.floor(action.progress * options.n), respawn, () => stallDiagnosis(sandbox, lines));
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
      lastFleetKill = Date.now();
      respawn();
    } else if (action.kind === 'key') {
      // Starts as the fleet makes its next call, so it meets work in flight; it ends by itself,
      // and the workers must notice and resume without anyone's help. A fleet just respawned (a
      // window can follow a fleet kill at once when progress ran past both marks) can take longer
      // to start than the window lasts on a busy machine: it would meet no call.
      await waitForStarted(alive, 60_000);
      await nextRequest(sandbox);
      // With accounts, the first window refuses one account's key only: the others keep syncing.
      const only = accounts && keyWindows % 2 === 0 ? { accounts: [accounts.names[0]!] } : {};
      refuseKey(sandbox, { status: keyWindows % 2 === 0 ? 401 : 403, forMs: KEY_WINDOW_MS, ...only });
      keyWindows += 1;
    } else if (action.kind === 'listing') {
      listingDone = listingWindow(sandbox, runtime.database.db).then((figures) => {
        listingFigures = figures;
      });
    } else if (action.kind === 'redis') {
      await redis.restartEmpty();
      redisRestarts += 1;
    } else if (action.kind === 'postgres_restart') {
      // Fast shutdown (every session ends, the statements in flight fail), refused connections
      // while it is down, then the same data on the same port. The workers are left alone.
      const from = Date.now();
      await postgres.restart(POSTGRES_DOWN_MS);
      postgresDown.push({ from, to: Date.now() });
      postgresBackAt = await serverNow(env.DATABASE_URL!);
      postgresRestarts += 1;
    } else {
      postgresConnectionsCut += await cutPostgres(postgres.url, databaseName);
      await sleep(300);
      postgresConnectionsCut += await cutPostgres(postgres.url, databaseName);
    }
  }
  // The changes still waiting for their moment go out (faults still on), then the heal: no more
  // faults; wait for every batch to come to rest, every change applied.
  trace(`plan done; ${changes.remaining} change steps still to publish`);
  const changeFigures = await changes.finish(Date.now() + options.timeoutMs, respawn);
  // Nothing publishes any more: a client still checked out was never given back.
  const intakeClientsLeaked = changeDatabase.pool.totalCount - changeDatabase.pool.idleCount;
  await listingDone;
  await doubt.stop();
  trace('changes published; healing');
  sandbox.faults.clear();
  respawn();
  const healed = await doubt.heal(options.n, Date.now() + options.timeoutMs, respawn);
  trace('at rest (or out of time); stopping the workers');
  await Promise.all(workers.map((w) => w.stop()));
  trace('workers stopped; building the report');
  // A worker still starting when PostgreSQL goes down exits at once, saying it cannot reach it (a
  // supervisor starts it again; the suite's respawn does): the suite's doing, not a crash.
  const refusedAtStart = (w: WorkerProcess) =>
    !w.started &&
    w.stderrTail.includes('Cannot reach PostgreSQL') &&
    postgresDown.some(({ from, to }) => w.exitedAt !== undefined && w.exitedAt >= from && w.exitedAt <= to + 5_000);
  const crashed = workers.filter((w) => !w.stoppedByUs && !refusedAtStart(w));
  const crashes = { count: crashed.length, samples: crashed.slice(0, 3).map((w) => w.stderrTail) };
  const startsRefused = workers.filter((w) => !w.stoppedByUs && refusedAtStart(w)).length;
  return await buildReport({
    crashes,
    options,
    runtime,
    sandbox,
    lines,
    kills,
    redisRestarts,
    postgresConnectionsCut,
    postgresRestarts,
    postgresBackAt,
    startsRefused,
    keyWindows,
    started: input.started,
    changes: changeFigures,
    intakeClientsLeaked,
    expected: changes.expected(),
    doubt,
    listingFigures,
    healed,
  });
}

/** `n` accounts, each with credentials of its own and one institute. */
function chaosAccounts(n: number) {
  const names = Array.from({ length: n }, (_, i) => `chaos${i + 1}`);
  return { names, file: writeAccountsFile(names.map((name) => ({ name }))) };
}

type Action = { progress: number; delayMs: number; kind: 'single' | 'fleet' | 'redis' | 'postgres' | 'postgres_restart' | 'key' | 'listing' };

/**
 * How long each key window lasts: six key probes (CLASSROOM_KEY_PROBE_EVERY) and a few dozen calls
 * at the fleet's pace. In the second every key is refused and the whole fleet waits.
 */
const KEY_WINDOW_MS = 3_000;

/** How long the restart keeps PostgreSQL down (every connection refused). */
const POSTGRES_DOWN_MS = 1_500;

/** What the live-service mode adds to the sandbox for the whole run (until the suite heals it). */
const LIVE_BEHAVIOURS = { nameRewrite: { normalize: true, case: 'lower' as const, maxLength: 28 }, readLagMs: 500 };

/** Live mode: long names the remote cuts, each still telling its batch apart after the cut. */
function batchName(i: number, live: boolean): string {
  return live ? `Chaos batch ${i}  ·  ${['Physics', 'Chemistry', 'Biology'][i % 3]} evening group` : `Chaos batch ${i}`;
}

/**
 * Kills spread over the run (half of them whole-fleet kills right after an add-class), one Redis
 * restart at 40 %, one Postgres restart at 55 % and one Postgres cut at 70 %, each with a seeded
 * jitter.
 */
function chaosPlan(options: ChaosOptions, random: () => number): Action[] {
  const plan: Action[] = [];
  for (let k = 0; k < options.kills; k++) {
    plan.push({ progress: (0.8 * k) / options.kills, delayMs: Math.floor(random() * 200), kind: k % 2 === 0 ? 'single' : 'fleet' });
  }
  plan.push({ progress: 0.4, delayMs: Math.floor(random() * 200), kind: 'redis' });
  if (options.live) {
    plan.push({ progress: 0.25, delayMs: Math.floor(random() * 200), kind: 'key' });
    plan.push({ progress: 0.6, delayMs: Math.floor(random() * 200), kind: 'key' });
  }
  plan.push({ progress: 0.7, delayMs: Math.floor(random() * 200), kind: 'postgres' });
  // Drawn last, so the jitters and victims drawn before it are those of earlier runs of a seed.
  plan.push({ progress: 0.55, delayMs: Math.floor(random() * 200), kind: 'postgres_restart' });
  // Every listing refused until batches in doubt run out of attempts (refusals.ts); no jitter drawn.
  // It runs beside the plan, after the key windows (a probe is a listing: refused, it would hold a
  // breaker open), while the backfill still waits for its add-classes (one loses its answer).
  plan.push({ progress: 0.62, delayMs: 0, kind: 'listing' });
  return plan.sort((a, b) => a.progress - b.progress);
}

/** What the fleet and the sandbox were doing when progress stopped: the report of a stalled run. */
function stallDiagnosis(sandbox: Awaited<ReturnType<typeof startSandbox>>, lines: readonly WorkerLine[]): string {
  const counts = new Map<string, number>();
  for (const line of lines.slice(-2_000)) {
    if (typeof line.level !== 'number' || line.level < 40) continue;
    const key = String(line.msg ?? '')
      .replace(/[0-9a-f]{24,}/g, '<id>')
      .replace(/\d+/g, 'N')
      .slice(0, 140);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 12);
  const calls = sandbox.state({ classes: false }).calls.byOperation;
  return `sandbox calls ${JSON.stringify(calls)}; last warnings and errors ${JSON.stringify(top)}`;
}

/** Waits until `synced` batches are done (synced or cancelled), keeping the fleet at strength; fails if progress stops. */
async function waitForProgress(runtime: ReturnType<typeof createRuntime>, synced: number, respawn: () => void, diagnose: () => string): Promise<void> {
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    // Done: synced, or cancelled (a third of the batches change, and some end cancelled).
    // The suite cuts and restarts PostgreSQL: a read that meets it is made again on the next turn.
    const [row] = await runtime.database.db
      .select({ n: count() })
      .from(batchClasses)
      .where(inArray(batchClasses.state, ['synced', 'cancelled']))
      .catch(() => [{ n: last }]);
    const done = Number(row?.n ?? 0);
    if (done >= synced) return;
    if (done !== last) {
      last = done;
      lastChange = Date.now();
    } else if (Date.now() - lastChange > 90_000) {
      const states = await runtime.database.db.select({ state: batchClasses.state, n: count() }).from(batchClasses).groupBy(batchClasses.state);
      throw new Error(`no progress for 90 s at ${done}/${synced} synced; states ${JSON.stringify(states)}; ${diagnose()}`);
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

/** Waits (at most `timeoutMs`) until every live worker has started, i.e. is past its migrations. */
async function waitForStarted(alive: () => WorkerProcess[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!alive().every((w) => w.started) && Date.now() < deadline) await sleep(50);
}

/** Resolves when the sandbox receives its next request (or after 5 s, should none come). */
function nextRequest(sandbox: Awaited<ReturnType<typeof startSandbox>>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(), 5_000);
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    };
    const unsubscribe = sandbox.onRequest(() => done());
  });
}

async function cutPostgres(server: string, databaseName: string): Promise<number> {
  const client = new pg.Client({ connectionString: `${server}/postgres` });
  await client.connect();
  try {
    const result = await client.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [databaseName]);
    return result.rowCount ?? 0;
  } finally {
    await client.end();
  }
}

/** The server's `now()`, as text so that no microsecond is lost on the way back to it. */
async function serverNow(databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    const result = await client.query<{ now: string }>('select now()::text as now');
    return result.rows[0]!.now;
  } finally {
    await client.end();
  }
}

/**
 * Milliseconds from `since` (the server's clock) to the first state change a batch recorded after
 * it; null when none did. A transition's `at` is the server's `now()` of the write that made it.
 */
async function firstTransitionAfter(runtime: ReturnType<typeof createRuntime>, since: string | undefined): Promise<number | null> {
  if (since === undefined) return null;
  const result = await runtime.database.pool.query<{ ms: string | null }>(
    `select extract(epoch from min(at) - $1::timestamptz) * 1000 as ms from batch_events where type = 'transition' and at > $1::timestamptz`,
    [since],
  );
  const ms = result.rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.round(Number(ms));
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
  postgresRestarts: number;
  /** The server's `now()` right after the restart, when there was one. */
  postgresBackAt: string | undefined;
  startsRefused: number;
  keyWindows: number;
  started: number;
  changes: ChangeFigures;
  intakeClientsLeaked: number;
  /** What each batch's last event leaves it expecting, by batch id. */
  expected: Map<string, Expected>;
  doubt: DoubtDrivers;
  listingFigures: ListingWindowFigures;
  healed: HealFigures;
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
  // By the batch id each class carries: a rename changes its name (and the remote may rewrite it).
  const ours = [...classesByRef(truth.classes!)];
  const { doubt, checks } = await input.doubt.report(rows, truth.classes!, input.expected, { listingWindow: input.listingFigures, healed: input.healed });
  // At rest on purpose: synced, needs_review (with its reason), cancelled, left abandoned by the
  // operator, or failed because the suite deleted the batch's class (the remote no longer knows it).
  const accounted =
    synced.length + rows.filter((r) => r.state === 'needs_review' || r.state === 'cancelled').length + doubt.abandoned.left + doubt.failedClassGone;
  const breakerOpened = lines.filter((line) => line.breaker === 'open').length;
  const refusedCalls = Object.values(truth.calls.byOperation).reduce((sum, op) => sum + (op.outcomes.http401 ?? 0) + (op.outcomes.http403 ?? 0), 0);
  return {
    seed: options.seed,
    live: options.live,
    callsPerAccount: Object.fromEntries(Object.entries(truth.calls.byAccount).map(([name, a]) => [name, a.calls])),
    keyRefusals: { windows: input.keyWindows, refusedCalls, breakerOpened },
    n: options.n,
    workers: options.workers,
    synced: synced.length,
    needsReview: rows.filter((r) => r.state === 'needs_review').map((r) => ({ batchId: r.batchId, reason: r.lastError ?? '' })),
    failed: rows.filter((r) => r.state === 'failed').length,
    failedSamples: rows
      .filter((r) => r.state === 'failed')
      .slice(0, 5)
      .map((r) => ({ batchId: r.batchId, attempts: r.attempts, kind: r.lastErrorKind, error: r.lastError })),
    cancelled: rows.filter((r) => r.state === 'cancelled').length,
    lost: options.n - accounted,
    duplicates: duplicatesOf(truth.classes!, [...input.doubt.deletions().values()]),
    remoteClasses: ours.reduce((sum, [, classes]) => sum + classes.length, 0),
    unattributedClasses: truth.classes!.filter((c) => typeof c.extra.chaosRef !== 'string').length,
    rowsWithClass: rows.filter((r) => r.classId !== null).length,
    changes: input.changes,
    intakeClientsLeaked: input.intakeClientsLeaked,
    changesDuringAddClass: await changesDuringAddClass(runtime),
    checks,
    offenders: await offendersOf(runtime, rows, truth.classes!, checks, lines, doubtNamed(doubt)),
    joinLinksMatching: synced.filter((r) => r.joinLink && byId.get(r.classId!)?.joinMagicLink === r.joinLink).length,
    doubt,
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
    postgresRestarts: input.postgresRestarts,
    postgresBackAfterRestartMs: await firstTransitionAfter(runtime, input.postgresBackAt),
    workersRefusedAtStart: input.startsRefused,
    timeToSyncedMs: { p50: pct(0.5), p95: pct(0.95), max: times[times.length - 1] ?? 0 },
    wallMs: Date.now() - input.started,
  };
}

type Row = typeof batchClasses.$inferSelect;

/** See ChaosReport.changesDuringAddClass: each `creating` spell of each batch, from its history. */
async function changesDuringAddClass(runtime: ReturnType<typeof createRuntime>): Promise<ChaosReport['changesDuringAddClass']> {
  const events = await runtime.database.db
    .select({
      row: batchEvents.batchRowId,
      type: batchEvents.type,
      toState: batchEvents.toState,
      operation: batchEvents.operation,
      outcome: batchEvents.outcome,
    })
    .from(batchEvents)
    .orderBy(asc(batchEvents.batchRowId), asc(batchEvents.id));
  const figures = { recorded: 0, answerLost: 0 };
  let spell: { row: number; changes: number; answered: boolean } | undefined;
  const close = () => {
    if (spell && spell.changes > 0) {
      figures.recorded += spell.changes;
      if (!spell.answered) figures.answerLost += spell.changes;
    }
    spell = undefined;
  };
  for (const e of events) {
    if (spell && spell.row !== e.row) close();
    // A call's audit line comes with the write after it, so an answer may follow a change recorded meanwhile.
    if (spell && e.type === 'remote_call' && e.operation === 'addClass' && e.outcome === 'ok') spell.answered = true;
    if (spell && (e.type === 'updated' || e.type === 'cancel_requested' || e.type === 'reopened')) spell.changes += 1;
    if (e.toState !== null && e.toState !== 'creating') close();
    if (e.toState === 'creating') {
      close();
      spell = { row: e.row, changes: 0, answered: false };
    }
  }
  close();
  return figures;
}

/** What to look at when a check fails: the first few batches it names, with their row, classes and history. */
async function offendersOf(
  runtime: ReturnType<typeof createRuntime>,
  rows: readonly Row[],
  classes: readonly ClassTruth[],
  checks: ChangeChecks,
  lines: readonly WorkerLine[],
  /** More entries naming batches (first word: the batch id): lease violations, wrong last words. */
  extraNamed: readonly string[][] = [],
): Promise<ChaosReport['offenders']> {
  const lists: readonly (readonly string[])[] = [...Object.values(checks), ...extraNamed];
  const named = lists.flatMap((entries) => entries.map((entry) => entry.split(/[ :]/)[0]!));
  const byRef = classesByRef(classes);
  const offenders: ChaosReport['offenders'] = {};
  for (const batchId of [...new Set(named)].slice(0, 8)) {
    const row = rows.find((r) => r.batchId === batchId);
    if (!row) continue;
    const events = await runtime.database.db.select().from(batchEvents).where(eq(batchEvents.batchRowId, row.id)).orderBy(asc(batchEvents.id));
    const { leaseOwner: _owner, ...rest } = row;
    offenders[batchId] = {
      row: rest,
      classes: byRef.get(batchId) ?? [],
      history: events.map((e) =>
        [
          e.at.toISOString().slice(11, 23),
          e.type,
          e.fromState || e.toState ? `${e.fromState ?? ''}->${e.toState ?? ''}` : '',
          e.operation ?? '',
          e.outcome ?? '',
          e.httpStatus ?? '',
          e.classId ? `class ${e.classId}` : '',
          e.attempt !== null ? `attempt ${e.attempt}` : '',
          e.workerId ?? '',
          e.detail ? JSON.stringify(e.detail) : '',
          e.error ? e.error.slice(0, 160) : '',
        ]
          .filter((part) => part !== '')
          .join(' '),
      ),
      workerLog: lines.filter((line) => line.batchId === batchId).map(logLine),
    };
  }
  return offenders;
}

/** One worker log line, short: when, what, and the error's kind, operation and message. */
function logLine(line: WorkerLine): string {
  const at = typeof line.time === 'number' ? new Date(line.time).toISOString().slice(11, 23) : '';
  const err = line.err as { kind?: string; operation?: string; message?: string } | undefined;
  const extra = Object.fromEntries(
    Object.entries(line).filter(([key]) => !['time', 'level', 'msg', 'err', 'pid', 'hostname', 'batchId', 'instituteId', 'jobId', 'name'].includes(key)),
  );
  return [at, line.level, line.msg, err ? `${err.kind ?? ''} ${err.operation ?? ''} ${(err.message ?? '').slice(0, 160)}` : '', JSON.stringify(extra)]
    .filter((part) => part !== undefined && part !== '')
    .join(' ');
}

export function printReport(report: ChaosReport, file = 'test-results/fault-report.json'): void {
  mkdirSync('test-results', { recursive: true });
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  const c = report.changes;
  const k = report.checks;
  const rows: [string, string][] = [
    ['seed / live-service mode', `${report.seed} / ${report.live ? 'on' : 'off'}`],
    ['batches (N) / worker processes', `${report.n} / ${report.workers}`],
    ['remote calls per account (own key each)', JSON.stringify(report.callsPerAccount)],
    [
      'synced / needs_review / cancelled / failed / lost',
      `${report.synced} / ${report.needsReview.length} / ${report.cancelled} / ${report.failed} / ${report.lost}`,
    ],
    [
      'remote classes / without a batch ref / rows with a class / duplicates',
      `${report.remoteClasses} / ${report.unattributedClasses} / ${report.rowsWithClass} / ${report.duplicates}`,
    ],
    [
      'changed batches / changes: renames, subjects, cancels, reopenings, restates',
      `${c.batchesChanged} / ${c.published}: ${c.renames}, ${c.subjectChanges}, ${c.cancels}, ${c.reopenings}, ${c.restates}`,
    ],
    ['… landed while the batch was', JSON.stringify(c.landedWhile)],
    ['… recorded during an add-class (history) / its answer lost', `${report.changesDuringAddClass.recorded} / ${report.changesDuringAddClass.answerLost}`],
    [
      '… within 5 s of a fleet kill / publishes retried / never due / pool clients leaked',
      `${c.afterFleetKill} / ${c.publishRetries} / ${c.dropped} / ${report.intakeClientsLeaked}`,
    ],
    [
      'stale events: published / answered stale / duplicate / otherwise',
      `${c.stale.published} / ${c.stale.answeredStale} / ${c.stale.answeredDuplicate} / ${c.stale.answeredOtherwise.length}`,
    ],
    [
      'cancelled visible / names stale / fields stale / stale applied',
      `${k.cancelledVisible.length} / ${k.namesStale.length} / ${k.fieldsStale.length} / ${k.staleApplied.length}`,
    ],
    ['not at rest after healing / cancels held (needs_review)', `${k.notAtRest.length} / ${k.cancelHeld.length}`],
    ...doubtRows(report.doubt, k),
    ['join links stored and equal to get-class', String(report.joinLinksMatching)],
    ['add-class POSTs sent', String(report.addClassPosts)],
    ['add-class outcome unknown (errors seen)', String(report.outcomeUnknown.addClassErrors)],
    ['… resolved by reading', JSON.stringify(report.outcomeUnknown.resolutions)],
    ['faults injected', JSON.stringify(report.faultsInjected)],
    ['retries per batch: mean / max', `${report.retriesPerBatch.mean} / ${report.retriesPerBatch.max}`],
    ['SIGKILLs: single / fleet-after-add-class / processes', `${report.kills.single} / ${report.kills.fleetAfterAddClass} / ${report.kills.processesKilled}`],
    ['worker crashes (exits not caused by the suite)', String(report.crashes.count)],
    ['Redis restarts (data lost) / Postgres connections cut', `${report.redisRestarts} / ${report.postgresConnectionsCut}`],
    [
      'Postgres restarts / first batch moved after (ms) / workers refused at start',
      `${report.postgresRestarts} / ${report.postgresBackAfterRestartMs ?? 'none moved after the restart'} / ${report.workersRefusedAtStart}`,
    ],
    [
      'key refused: windows / calls refused / breaker opened',
      `${report.keyRefusals.windows} / ${report.keyRefusals.refusedCalls} / ${report.keyRefusals.breakerOpened}`,
    ],
    ['time to synced p50 / p95 / max (ms)', `${report.timeToSyncedMs.p50} / ${report.timeToSyncedMs.p95} / ${report.timeToSyncedMs.max}`],
    ['wall time (s)', (report.wallMs / 1000).toFixed(1)],
    ...report.failedSamples.map((f): [string, string] => [`failed ${f.batchId} after ${f.attempts} attempt(s)`, `${f.kind}: ${f.error}`]),
    ...samples('cancelled visible', k.cancelledVisible),
    ...samples('name stale', k.namesStale),
    ...samples('fields stale', k.fieldsStale),
    ...samples('stale applied', k.staleApplied),
    ...samples('not at rest', k.notAtRest),
    ...doubtSamples(report.doubt, k),
    ...samples('stale event not refused', c.stale.answeredOtherwise),
    ...samples('change not applied', c.realNotApplied),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(['fault suite report', ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join('\n'));
}

/** The first few entries of a check, one row each. */
function samples(label: string, entries: readonly string[]): [string, string][] {
  return entries.slice(0, 5).map((entry) => [label, entry]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
