// Webhooks: how fast the dispatcher empties the outbox to a local endpoint, and whether delivering
// the messages slows the sync beside it.
//
//   npm run bench:webhooks                               # 2,000 messages a delivery run, 1,500 batches a sync run, 4 rounds
//   npm run bench:webhooks -- --messages 20000 --batches 3000 --rounds 6
//   npm run bench:webhooks -- --latency 100 --concurrency 64 --webhook-concurrency 8,32
//   BENCH_WORKER_PROFILE_DIR=DIR npm run bench:webhooks -- …   # each worker's CPU profile per thread
//                                                              # (summary: npx tsx bench/support/profile-top.ts FILE)
//
// The endpoint is this file with --receiver-child, in a process of its own: node:http on loopback
// that reads each body, verifies its signature with the reference library (`standardwebhooks`) and
// answers 204. It counts requests, verified signatures and message ids it saw before.
//   1. Delivery: N batch_classes rows inserted as pending and moved to synced by one UPDATE, so the
//      real trigger (migrations/0007) writes N batch.synced messages; then `startWebhookDelivery` in
//      this process (its own pool and connections, as the worker runs it) with WEBHOOK_URL at the
//      endpoint. Messages/s = N ÷ the time from its start to the N-th delivered outcome (recorded in
//      the outbox). At each WEBHOOK_CONCURRENCY (8, the default, and 32), taking turns, `rounds` times.
//   2. Sync with webhooks off and on: a sandbox (own process) answering after L ms; per run, a fresh
//      `classroom-sync worker` process (SYNC_CONCURRENCY C, limiter far above the load) without
//      WEBHOOK_URL (off: its dispatcher still runs and records each message skipped) or with it at
//      the endpoint (on); B batches published at once; batches/s = slope of the synced count between
//      10 % and 90 % of B. Runs go off, on, on, off, … (after one unmeasured run that warms the
//      sandbox, the endpoint and PostgreSQL), so drift in the machine's load falls on both sides (an
//      even number of rounds cancels a steady drift exactly); the ratio of the means is judged
//      against 0.95. When the last batch is synced, the backlog and the time of one claim (`claimDueMessages`, rolled back); then up to 15 s for the run's messages to
//      be settled (what is left is set aside, so the next run's worker does not send it).
// Before every run, the tables are emptied (growing tables slowed each run), then `vacuum (analyze)`
// and a checkpoint: a delivery run's statistics then know its N pending messages; a sync run's say
// that none is pending, as on a healthy outbox.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { TransactionRollbackError } from 'drizzle-orm/errors';
import { Webhook } from 'standardwebhooks';
import { type Config, loadConfig } from '../src/config/config.ts';
import { type Db, createDatabase } from '../src/db/client.ts';
import { type PublishDeps, publishBatches } from '../src/intake/publish.ts';
import { createLogger } from '../src/logging/logger.ts';
import { outbox } from '../src/mapping/index.ts';
import { createRuntime, publishDepsOf } from '../src/runtime/runtime.ts';
import { within } from '../src/support/timeout.ts';
import { DELIVERY_NICE, startWebhookDelivery } from '../src/webhooks/index.ts';
import { commandCpuSeconds, machineCpuSeconds, processCpuSeconds, startSandboxProcess, startWorkerProcess, threadCpuSeconds } from './support/processes.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, quantile, round, steadyRate } from './support/report.ts';
import { countStatements } from './support/statements.ts';
import { argValue, benchEvents, createScratch, numberSetting, scratchPool, sleep } from './support/scratch.ts';

const SELF = fileURLToPath(import.meta.url);
/** A run that has not finished by then is reported as it stands. */
const RUN_BOUND_MS = 3 * 60_000;
/** Batches of the unmeasured warm-up sync run; messages of the warm-up delivery run. */
const WARM_UP = 500;
const WARM_UP_MESSAGES = 1_000;
/** How long a sync run waits for its messages once its last batch is synced; what is left is set aside. */
const SETTLE_BOUND_MS = 15_000;

type Pool = pg.Pool;

interface EndpointStats {
  received: number;
  verified: number;
  invalid: number;
  /** Requests whose webhook-id had come before. */
  repeated: number;
}

interface Endpoint {
  url: string;
  pid: number;
  stats(): Promise<EndpointStats>;
  stop(): Promise<void>;
}

interface DeliveryRun {
  concurrency: number;
  messages: number;
  delivered: number;
  /** Outcomes other than delivered (retry, given_up, skipped). */
  other: number;
  seconds: number;
  perSecond: number;
  steadyPerSecond: number;
  /** This process's CPU (the dispatcher, its pool and its HTTP client) per delivered message. */
  cpuMsPerMessage: number;
  /** PostgreSQL statements the dispatcher sent per delivered message (claims and records). */
  statementsPerMessage: number;
  machineBusy: number | undefined;
  outbox: Record<string, number>;
  endpoint: EndpointStats;
}

interface SyncRun {
  webhooks: boolean;
  batches: number;
  synced: number;
  perSecond: number;
  wallSeconds: number;
  /** The worker's CPU from publishing until every message of the run was settled, per batch. */
  workerCpuMsPerBatch: number | undefined;
  /** CPU per batch from publishing until the last batch was synced, by process (machine: all of it). */
  cpuMsPerBatch: Record<CpuParty, number | undefined>;
  machineBusy: number | undefined;
  /** Its messages by outbox status once settled. */
  outbox: Record<string, number>;
  /** Last batch synced → last message settled (or SETTLE_BOUND_MS). */
  settleSeconds: number;
  /** When the last batch was synced: messages pending, and one claim of up to 8 by the real statement (rolled back). */
  atSynced: { pending: number; claimMs: number };
  /** Messages of the run still pending SETTLE_BOUND_MS after its last batch was synced (then set aside). */
  leftPending: number;
  /** occurred_at → delivered_at of its delivered messages. */
  lagMs: { p50: number; p95: number; max: number } | undefined;
  endpoint: EndpointStats;
}

type CpuParty = 'worker' | 'worker main thread' | 'delivery thread' | 'endpoint' | 'sandbox' | 'postgres' | 'machine';

/** CPU seconds so far of each party of a sync run. */
function cpuOfParties(pids: { worker: number; endpoint: number; sandbox: number }): Record<CpuParty, number | undefined> {
  return {
    worker: processCpuSeconds(pids.worker),
    'worker main thread': threadCpuSeconds(pids.worker, 'main'),
    'delivery thread': threadCpuSeconds(pids.worker, { nice: DELIVERY_NICE }),
    endpoint: processCpuSeconds(pids.endpoint),
    sandbox: processCpuSeconds(pids.sandbox),
    postgres: commandCpuSeconds('postgres'),
    machine: machineCpuSeconds()?.busy,
  };
}

async function main(): Promise<void> {
  const messages = numberSetting('--messages', 'BENCH_MESSAGES', 2_000);
  const batches = numberSetting('--batches', 'BENCH_BATCHES', 1_500);
  const rounds = numberSetting('--rounds', 'BENCH_ROUNDS', 4);
  const latencyMs = numberSetting('--latency', 'BENCH_LATENCY_MS', 100);
  const syncConcurrency = numberSetting('--concurrency', 'BENCH_CONCURRENCY', 64);
  const levels = (argValue('--webhook-concurrency') ?? '8,32').split(',').map(Number);
  if (levels.some((c) => !Number.isInteger(c) || c < 1 || c > 200)) throw new Error('--webhook-concurrency must be integers 1..200, e.g. 8,32');
  const machine = machineAtStart();
  const scratch = await createScratch('webhooks');
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const pool = scratchPool(scratch);
  const stops: (() => Promise<void>)[] = [];
  try {
    const endpoint = await startEndpoint(secret);
    stops.push(endpoint.stop);
    const sandbox = await startSandboxProcess(['--latency', String(latencyMs)], scratch.env);
    stops.push(sandbox.stop);
    const env = {
      ...scratch.env,
      CLASSROOM_BASE_URL: sandbox.url,
      SYNC_CONCURRENCY: String(syncConcurrency),
      CLASSROOM_RATE_LIMIT_PER_MINUTE: '1000000',
    };
    const hooked = { WEBHOOK_URL: endpoint.url, WEBHOOK_SECRET: secret };
    const config = loadConfig({ ...env, ...hooked });
    const deliveries: DeliveryRun[] = [];
    await deliveryRun({ pool, config, endpoint }, 'deliverwarm', Math.min(WARM_UP_MESSAGES, messages), levels[0]!);
    for (let r = 0; r < rounds; r += 1) {
      for (const c of r % 2 === 0 ? levels : [...levels].reverse()) {
        deliveries.push(await deliveryRun({ pool, config, endpoint }, `deliver${c}r${r + 1}`, messages, c));
        progress(`delivery at WEBHOOK_CONCURRENCY ${c}: ${deliveries.at(-1)!.perSecond.toFixed(0)} messages/s`);
      }
    }
    const runtime = createRuntime(loadConfig(env), { logger: createLogger({ level: 'silent' }) });
    const probe = createDatabase(config.databaseUrl, { max: 1, applicationName: 'bench-webhooks-probe' });
    const syncs: SyncRun[] = [];
    try {
      const on = { deps: publishDepsOf(runtime), pool, db: probe.db, endpoint, sandboxPid: sandbox.pid };
      await syncRun(on, { ...env, ...hooked }, true, 'warm', Math.min(WARM_UP, batches));
      for (let r = 0; r < rounds; r += 1) {
        for (const webhooks of r % 2 === 0 ? [false, true] : [true, false]) {
          syncs.push(await syncRun(on, webhooks ? { ...env, ...hooked } : env, webhooks, `${webhooks ? 'on' : 'off'}${r + 1}`, batches));
          progress(`sync with webhooks ${webhooks ? 'on' : 'off'}: ${syncs.at(-1)!.perSecond.toFixed(1)} batches/s`);
        }
      }
    } finally {
      await runtime.close();
      await probe.close();
    }
    report({ machine, messages, batches, rounds, latencyMs, syncConcurrency, levels, deliveries, syncs });
  } finally {
    await pool.end();
    for (const stop of stops.reverse()) await stop();
    await scratch.drop();
  }
}

const progress = (line: string) => console.error(line);

/** N rows moved to synced in one statement: the real trigger writes one batch.synced message each. */
async function fillOutbox(pool: Pool, instituteId: string, prefix: string, n: number): Promise<void> {
  await pool.query(
    `insert into batch_classes (institute_id, batch_id, class_name, event)
     select $1::text, b, 'Bench ' || b, jsonb_build_object('batchId', b, 'name', 'Bench ' || b, 'subject', 'Bench', 'instituteId', $1::text, 'extra', '{}'::jsonb)
       from (select $2::text || '-' || lpad(g::text, 6, '0') as b from generate_series(1, $3::int) g) s`,
    [instituteId, prefix, n],
  );
  await pool.query(
    `update batch_classes set state = 'synced', class_id = 'bench-' || id, join_link = 'https://classroom.example/join/' || md5(id::text),
            synced_at = now(), updated_at = now()
      where batch_id like $1`,
    [`${prefix}-%`],
  );
}

async function deliveryRun(on: { pool: Pool; config: Config; endpoint: Endpoint }, prefix: string, n: number, concurrency: number): Promise<DeliveryRun> {
  const { pool, config, endpoint } = on;
  await emptyTables(pool);
  await fillOutbox(pool, config.classroom.instituteId, prefix, n);
  await quiesce(pool);
  const before = await endpoint.stats();
  const statements0 = statements();
  let delivered = 0;
  let other = 0;
  let finish = () => {};
  const all = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const samples: { t: number; count: number }[] = [];
  const sampleEvery = Math.max(1, Math.floor(n / 200));
  const [cpu, busy] = [process.cpuUsage(), machineCpuSeconds()];
  const started = performance.now();
  samples.push({ t: started, count: 0 });
  let ended = started;
  const delivery = startWebhookDelivery({
    databaseUrl: config.databaseUrl,
    settings: { ...config.webhooks, concurrency },
    accounts: config.accounts,
    logger: createLogger({ level: 'silent' }),
    onOutcome: (outcome) => {
      if (outcome !== 'delivered') {
        other += 1;
        return;
      }
      delivered += 1;
      if (delivered % sampleEvery === 0) samples.push({ t: performance.now(), count: delivered });
      if (delivered === n) {
        ended = performance.now();
        finish();
      }
    },
  });
  const done = await within(all, RUN_BOUND_MS);
  if (!done.done) ended = performance.now();
  const used = process.cpuUsage(cpu);
  const sent = statements() - statements0;
  const machineBusy = busyShare(busy, machineCpuSeconds());
  await delivery.close(5_000);
  const seconds = (ended - started) / 1000;
  return {
    concurrency,
    messages: n,
    delivered,
    other,
    seconds,
    perSecond: delivered / seconds,
    steadyPerSecond: steadyRate(samples),
    cpuMsPerMessage: (used.user + used.system) / 1000 / Math.max(1, delivered),
    statementsPerMessage: sent / Math.max(1, delivered),
    machineBusy,
    outbox: await outboxOf(pool, prefix),
    endpoint: minus(await endpoint.stats(), before),
  };
}

/** One sync run on a fresh worker process; waits (at most SETTLE_BOUND_MS once its batches are synced) for its messages to be settled. */
async function syncRun(
  on: { deps: PublishDeps; pool: Pool; db: Db; endpoint: Endpoint; sandboxPid: number },
  env: Record<string, string>,
  webhooks: boolean,
  prefix: string,
  n: number,
): Promise<SyncRun> {
  const { deps, pool, db, endpoint } = on;
  await emptyTables(pool);
  await quiesce(pool);
  const worker = await startWorkerProcess(env);
  const parties = () => cpuOfParties({ worker: worker.pid, endpoint: endpoint.pid, sandbox: on.sandboxPid });
  let leftPending = 0;
  try {
    const before = await endpoint.stats();
    const events = benchEvents(prefix, n);
    const like = `${prefix}-%`;
    const [cpu0, busy0, parties0] = [processCpuSeconds(worker.pid), machineCpuSeconds(), parties()];
    const started = performance.now();
    for (let i = 0; i < n; i += 1_000) await publishBatches(deps, events.slice(i, i + 1_000));
    const samples: { t: number; count: number }[] = [];
    const deadline = started + RUN_BOUND_MS;
    let synced = 0;
    for (;;) {
      const t = performance.now();
      const counts = await countStates(pool, like);
      synced = counts.synced;
      samples.push({ t, count: synced });
      if (counts.terminal >= n || t > deadline) break;
      await sleep(Math.max(0, 250 - (performance.now() - t)));
    }
    const syncedAt = performance.now();
    const machineBusy = busyShare(busy0, machineCpuSeconds());
    const parties1 = parties();
    const cpuMsPerBatch = Object.fromEntries(
      Object.entries(parties0).map(([party, before]) => {
        const after = parties1[party as CpuParty];
        return [party, before === undefined || after === undefined ? undefined : round(((after - before) * 1000) / n, 2)];
      }),
    ) as Record<CpuParty, number | undefined>;
    const atSynced = await claimProbe(db, pool);
    const settleBy = Math.min(deadline, syncedAt + SETTLE_BOUND_MS);
    for (;;) {
      leftPending = await pendingMessages(pool, like);
      if (leftPending === 0 || performance.now() > settleBy) break;
      await sleep(50);
    }
    const settledAt = performance.now();
    const cpu1 = processCpuSeconds(worker.pid);
    return {
      webhooks,
      batches: n,
      synced,
      perSecond: steadyRate(samples),
      wallSeconds: (syncedAt - started) / 1000,
      workerCpuMsPerBatch: cpu0 === undefined || cpu1 === undefined ? undefined : ((cpu1 - cpu0) * 1000) / n,
      cpuMsPerBatch,
      machineBusy,
      outbox: await outboxOf(pool, prefix),
      settleSeconds: (settledAt - syncedAt) / 1000,
      atSynced,
      leftPending,
      lagMs: webhooks ? await deliveryLag(pool, like) : undefined,
      endpoint: minus(await endpoint.stats(), before),
    };
  } finally {
    await worker.stop();
    // Left over, they would be sent (or skipped) by the next run's worker and counted as its work.
    if (leftPending > 0) {
      await pool.query(
        `update webhook_messages set status = 'skipped', locked_until = null, last_error = 'set aside by bench/webhooks.ts: still pending when its run ended'
          where status = 'pending' and batch_id like $1`,
        [`${prefix}-%`],
      );
    }
  }
}

/** How many messages are pending, and the time of one claim of up to 8 by the dispatcher's own statement (rolled back). */
async function claimProbe(db: Db, pool: Pool): Promise<{ pending: number; claimMs: number }> {
  const { rows } = await pool.query<{ n: string }>(`select count(*) as n from webhook_messages where status = 'pending'`);
  let claimMs = Number.NaN;
  await db
    .transaction(async (tx) => {
      const started = performance.now();
      await outbox.claimDueMessages(tx as unknown as Db, 8, 35_000);
      claimMs = performance.now() - started;
      tx.rollback();
    })
    .catch((error: unknown) => {
      if (!(error instanceof TransactionRollbackError)) throw error;
    });
  return { pending: Number(rows[0]!.n), claimMs: round(claimMs, 1) };
}

/**
 * Every run starts from empty tables (each run's figures are read before the next starts). Tables
 * that grew run after run made each sync run slower than the one before (PostgreSQL's CPU a batch
 * rose by half over eight runs), a drift as large as the effect measured.
 */
async function emptyTables(pool: Pool): Promise<void> {
  await pool.query('truncate batch_classes, batch_events, webhook_messages, reconciliation_runs cascade');
}

/**
 * Statistics taken now (not by an autovacuum in the middle of a run), and a fresh checkpoint (so no
 * run pays for one it did not cause).
 */
async function quiesce(pool: Pool): Promise<void> {
  await pool.query('vacuum (analyze) batch_classes, webhook_messages, batch_events');
  await pool.query('checkpoint').catch(() => {});
}

/** Every statement this process sends (the dispatcher's, while a delivery run lasts). */
const statements = countStatements();

async function countStates(pool: Pool, like: string): Promise<{ synced: number; terminal: number }> {
  const { rows } = await pool.query<{ synced: string; terminal: string }>(
    `select count(*) filter (where state = 'synced') as synced, count(*) filter (where state in ('synced', 'failed', 'needs_review')) as terminal
       from batch_classes where batch_id like $1`,
    [like],
  );
  return { synced: Number(rows[0]!.synced), terminal: Number(rows[0]!.terminal) };
}

async function pendingMessages(pool: Pool, like: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`select count(*) as n from webhook_messages where status = 'pending' and batch_id like $1`, [like]);
  return Number(rows[0]!.n);
}

/** The run's messages by status (`prefix` without the `-%`). */
async function outboxOf(pool: Pool, prefix: string): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ status: string; n: string }>(
    `select status, count(*) as n from webhook_messages where batch_id like $1 group by status order by status`,
    [`${prefix}-%`],
  );
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

async function deliveryLag(pool: Pool, like: string): Promise<{ p50: number; p95: number; max: number }> {
  const { rows } = await pool.query<{ ms: number }>(
    `select extract(epoch from (delivered_at - occurred_at)) * 1000 as ms from webhook_messages where status = 'delivered' and batch_id like $1`,
    [like],
  );
  const ms = rows.map((r) => Number(r.ms));
  return { p50: round(quantile(ms, 0.5)), p95: round(quantile(ms, 0.95)), max: round(Math.max(0, ...ms)) };
}

function busyShare(from: ReturnType<typeof machineCpuSeconds>, to: ReturnType<typeof machineCpuSeconds>): number | undefined {
  return from && to && to.total > from.total ? (to.busy - from.busy) / (to.total - from.total) : undefined;
}

function minus(a: EndpointStats, b: EndpointStats): EndpointStats {
  return { received: a.received - b.received, verified: a.verified - b.verified, invalid: a.invalid - b.invalid, repeated: a.repeated - b.repeated };
}

/** The endpoint in a process of its own (this file with --receiver-child), over IPC. */
async function startEndpoint(secret: string): Promise<Endpoint> {
  const child = fork(SELF, ['--receiver-child'], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_WEBHOOK_SECRET: secret },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the endpoint process exited with ${code}`));
      child.once('exit', onExit);
      child.once('message', (m) => {
        child.off('exit', onExit);
        resolve(m as T);
      });
    });
  const url = await next<string>();
  return {
    url,
    pid: child.pid!,
    stats() {
      const answer = next<EndpointStats>();
      child.send('stats');
      return answer;
    },
    async stop() {
      if (child.exitCode === null && child.connected) child.send('stop');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Reads each body, answers 204, and verifies it with the reference library when asked for its
 * figures: an integrator's endpoint runs on its own machine, so its checks should not take the
 * cores the sync runs on while a run is measured. Every request is still verified.
 */
async function receiverChild(): Promise<void> {
  const webhook = new Webhook(process.env.BENCH_WEBHOOK_SECRET!);
  const stats: EndpointStats = { received: 0, verified: 0, invalid: 0, repeated: 0 };
  const seen = new Set<string>();
  let unverified: { body: string; headers: Record<string, string> }[] = [];
  const verifyAll = () => {
    for (const { body, headers } of unverified) {
      try {
        webhook.verify(body, headers);
        stats.verified += 1;
      } catch {
        stats.invalid += 1;
      }
    }
    unverified = [];
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      stats.received += 1;
      const id = String(req.headers['webhook-id']);
      if (seen.has(id)) stats.repeated += 1;
      else seen.add(id);
      const headers = req.headers as Record<string, string>;
      unverified.push({
        body,
        headers: { 'webhook-id': id, 'webhook-timestamp': headers['webhook-timestamp']!, 'webhook-signature': headers['webhook-signature']! },
      });
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.send!(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`);
  process.on('message', (m) => {
    if (m === 'stats') {
      verifyAll();
      process.send!(stats);
    }
    if (m === 'stop') {
      server.close(() => process.exit(0));
      server.closeAllConnections();
    }
  });
}

const mean = (values: readonly number[]) => values.reduce((s, v) => s + v, 0) / Math.max(1, values.length);
const sum = (values: readonly number[]) => values.reduce((s, v) => s + v, 0);
const pct = (share: number | undefined) => (share === undefined ? '?' : `${(100 * share).toFixed(0)} %`);

function report(r: {
  machine: Machine;
  messages: number;
  batches: number;
  rounds: number;
  latencyMs: number;
  syncConcurrency: number;
  levels: number[];
  deliveries: DeliveryRun[];
  syncs: SyncRun[];
}): void {
  const byLevel = r.levels.map((c) => {
    const runs = r.deliveries.filter((d) => d.concurrency === c);
    return {
      concurrency: c,
      runs,
      perSecond: mean(runs.map((d) => d.perSecond)),
      cpuMs: mean(runs.map((d) => d.cpuMsPerMessage)),
      statements: mean(runs.map((d) => d.statementsPerMessage)),
    };
  });
  const [off, on] = [r.syncs.filter((s) => !s.webhooks), r.syncs.filter((s) => s.webhooks)];
  const [offRate, onRate] = [mean(off.map((s) => s.perSecond)), mean(on.map((s) => s.perSecond))];
  const ratio = onRate / offRate;
  const endpoint = (runs: readonly { endpoint: EndpointStats }[]) => ({
    received: sum(runs.map((x) => x.endpoint.received)),
    verified: sum(runs.map((x) => x.endpoint.verified)),
    repeated: sum(runs.map((x) => x.endpoint.repeated)),
  });
  const sent = endpoint([...r.deliveries, ...on]);
  const recordedDelivered = sum([...r.deliveries, ...on].map((x) => x.outbox.delivered ?? 0));
  const offSkipped = sum(off.map((s) => s.outbox.skipped ?? 0));
  const cpu = (runs: SyncRun[]) => mean(runs.map((s) => s.workerCpuMsPerBatch ?? Number.NaN));
  const partyCpu = (runs: SyncRun[], party: CpuParty) => mean(runs.map((s) => s.cpuMsPerBatch[party] ?? Number.NaN)).toFixed(2);
  const list = (values: number[], digits: number) => values.map((v) => v.toFixed(digits)).join(', ');
  publish({
    bench: 'webhooks',
    title: 'Webhook delivery (`bench/webhooks.ts`)',
    command: `npm run bench:webhooks -- --messages ${r.messages} --batches ${r.batches} --rounds ${r.rounds} --latency ${r.latencyMs} --concurrency ${r.syncConcurrency} --webhook-concurrency ${r.levels.join(',')}`,
    machine: machineAtEnd(r.machine),
    figures: {
      messages: r.messages,
      batches: r.batches,
      rounds: r.rounds,
      latencyMs: r.latencyMs,
      syncConcurrency: r.syncConcurrency,
      delivery: byLevel.map((l) => ({
        concurrency: l.concurrency,
        perSecond: round(l.perSecond, 1),
        runs: l.runs.map((d) => ({ ...d, perSecond: round(d.perSecond, 1), steadyPerSecond: round(d.steadyPerSecond, 1), seconds: round(d.seconds, 2) })),
      })),
      sync: r.syncs.map((s) => ({ ...s, perSecond: round(s.perSecond, 1), wallSeconds: round(s.wallSeconds, 2), settleSeconds: round(s.settleSeconds, 2) })),
      syncOffPerSecond: round(offRate, 1),
      syncOnPerSecond: round(onRate, 1),
      ratio: round(ratio, 3),
      endpoint: sent,
    },
    rows: [
      ...byLevel.map((l) => ({
        figure: `deliveries per second, WEBHOOK_CONCURRENCY ${l.concurrency}`,
        value: `${l.perSecond.toFixed(0)} messages/s (runs: ${list(
          l.runs.map((d) => d.perSecond),
          0,
        )}; steady part ${list(
          l.runs.map((d) => d.steadyPerSecond),
          0,
        )}); dispatcher CPU ${l.cpuMs.toFixed(2)} ms and ${l.statements.toFixed(2)} PostgreSQL statements a message; machine busy ${l.runs.map((d) => pct(d.machineBusy)).join(', ')}`,
      })),
      {
        figure: 'signatures verified by the endpoint',
        value: `${sent.verified} of ${sent.received} requests (${((100 * sent.verified) / Math.max(1, sent.received)).toFixed(1)} %); ${sent.repeated} repeated ids; ${recordedDelivered} messages recorded delivered`,
        goal: 'all, once each',
        met: sent.verified === sent.received && sent.repeated === 0 && sent.received === recordedDelivered,
      },
      {
        figure: 'sync, webhooks off',
        value: `${offRate.toFixed(1)} batches/s (runs: ${list(
          off.map((s) => s.perSecond),
          1,
        )}); worker CPU ${cpu(off).toFixed(2)} ms a batch`,
      },
      {
        figure: 'sync, webhooks on',
        value: `${onRate.toFixed(1)} batches/s (runs: ${list(
          on.map((s) => s.perSecond),
          1,
        )}); worker CPU ${cpu(on).toFixed(2)} ms a batch`,
      },
      {
        figure: 'sync throughput, on ÷ off',
        value: `${ratio.toFixed(3)}: ${ratio >= 0.95 ? 'PASS' : 'FAIL'}`,
        goal: '≥ 0.95',
        met: ratio >= 0.95,
      },
      {
        figure: 'on: state change → delivered',
        value: `${on.map((s) => `p50 ${s.lagMs?.p50} / p95 ${s.lagMs?.p95} / max ${s.lagMs?.max} ms`).join('; ')} (each run)`,
      },
      {
        figure: 'when the last batch synced: pending; one claim',
        value: r.syncs.map((s) => `${s.webhooks ? 'on' : 'off'} ${s.atSynced.pending}; ${s.atSynced.claimMs} ms`).join(' · '),
      },
      {
        figure: `its messages pending ${SETTLE_BOUND_MS / 1000} s later`,
        value: `${r.syncs.map((s) => `${s.webhooks ? 'on' : 'off'} ${s.leftPending}${s.leftPending ? '' : ` (all settled in ${s.settleSeconds.toFixed(1)} s)`}`).join(' · ')}`,
      },
      {
        figure: 'off: messages recorded skipped',
        value: `${offSkipped} of ${off.length * r.batches} (no WEBHOOK_URL: the dispatcher still claims and records each)`,
      },
      {
        figure: 'CPU a batch while syncing, off / on',
        value: (['worker', 'worker main thread', 'delivery thread', 'endpoint', 'sandbox', 'postgres', 'machine'] as const)
          .map((party) => `${party} ${partyCpu(off, party)} / ${partyCpu(on, party)} ms`)
          .join(' · '),
      },
      {
        figure: 'machine busy during sync, off / on',
        value: `${off.map((s) => pct(s.machineBusy)).join(', ')} / ${on.map((s) => pct(s.machineBusy)).join(', ')} of ${cpus().length} cores`,
      },
    ],
    notes: [
      `Endpoint: node:http on loopback in a process of its own; it reads each body and answers 204; it verifies every request's signature with \`standardwebhooks\` when the benchmark asks for its figures (between runs), so that the integrator's work does not take the cores a run is measured on.`,
      `Delivery: ${r.messages} batch_classes rows per run moved to synced by one UPDATE (the real trigger writes one batch.synced message each), then \`startWebhookDelivery\` in the benchmark's process (2 PostgreSQL connections of its own, WEBHOOK_CONCURRENCY connections to the endpoint); messages/s = ${r.messages} ÷ the time from its start to the last delivered outcome recorded; steady part: slope between 10 % and 90 %. Levels take turns, ${r.rounds} runs each, after one unmeasured run of ${Math.min(WARM_UP_MESSAGES, r.messages)} messages; the mean is shown. Statements: every statement this process sent while the run lasted (claims of up to 4 × WEBHOOK_CONCURRENCY messages; one record statement for the outcomes that came together).`,
      `Sync: sandbox (\`classroom-sync sandbox --latency ${r.latencyMs}\`, its own process, no rate limit); per run a fresh \`classroom-sync worker\` process, SYNC_CONCURRENCY=${r.syncConcurrency}, CLASSROOM_RATE_LIMIT_PER_MINUTE=1000000, WEBHOOK_CONCURRENCY 8, with or without WEBHOOK_URL; ${r.batches} batches published at once; batches/s = slope of the synced count (every 250 ms) between 10 % and 90 %. After one unmeasured run of ${Math.min(WARM_UP, r.batches)} batches (webhooks on), runs alternate off, on, on, off, …; the ratio is of the means. Worker CPU: from publishing until every message of the run was settled (delivered or skipped) or ${SETTLE_BOUND_MS / 1000} s had passed. CPU a batch while syncing: from publishing until the last batch was synced, of the worker process (its delivery thread included; then its main thread and its delivery thread, told apart by the delivery thread's nice value), the endpoint, the sandbox, every process named postgres, and the whole machine. When the last batch is synced, one claim of up to 8 messages by the dispatcher's own statement (\`claimDueMessages\`) is timed in a transaction rolled back; messages of a run still pending ${SETTLE_BOUND_MS / 1000} s later are set aside (recorded skipped) so that the next run's worker does not send them. Before every run, delivery or sync: the tables the runs write are truncated and analyzed, and a \`checkpoint\`; so every run starts from the same state.`,
      'The claim looks up each candidate\'s batch\'s oldest pending message on a partial index (the anti-join it replaced was planned as a nested loop over every pending message per pending message while the statistics said none was pending: 0.5–1.0 s a claim at about 1,200 pending). A claim of hundreds of milliseconds in a run would be a slow plan again: docs/performance.md, "The outbox claim".',
    ],
  });
}

if (process.argv.includes('--receiver-child')) await receiverChild();
else await main();
