// Latency bound: with a slow remote and no rate limit, does one worker process keep C calls in
// flight (throughput near C / (3·L)), and how long does a batch take from event to `synced`?
//
//   npm run bench:latency                               # L = 100 ms, C = 64
//   npm run bench:latency -- --latency 200 --concurrency 32 --batches 2000
//
// The sandbox (own process) answers every call after L ms and admits any rate. One
// `classroom-sync worker` process runs with SYNC_CONCURRENCY=C (its limiter set far above the load).
//   1. Throughput: N batches published at once; the slope of the synced count (sampled every
//      250 ms from PostgreSQL) between 10 % and 90 % of N, against the ideal C / (3·L).
//   2. Time to synced: batches published at a steady rate of half the throughput measured in 1
//      (so none waits for a free job slot) for 10 s; synced_at − received_at of each, from
//      batch_classes (both PostgreSQL's clock). Phase 1's figures are printed too: there every batch
//      also queues behind the ones published with it.
//   3. The same at 5 batches/s: time to synced when nothing else of this benchmark is busy.
import { cpus } from 'node:os';
import type pg from 'pg';
import { loadConfig } from '../src/config/config.ts';
import { type PublishDeps, publishBatches } from '../src/intake/publish.ts';
import { createLogger } from '../src/logging/logger.ts';
import { createRuntime, publishDepsOf } from '../src/runtime/runtime.ts';
import { machineCpuSeconds, processCpuSeconds, startSandboxProcess, startWorkerProcess } from './support/processes.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, quantile, round, steadyRate } from './support/report.ts';
import { benchEvents, createScratch, numberSetting, scratchPool, sleep } from './support/scratch.ts';
import { countTerminal, publishAtRate } from './support/steady.ts';

const PHASE2_SECONDS = 10;
/** Batches per second of the light-load phase: the worker and the machine are mostly idle. */
const LIGHT_RATE = 5;

type SteadyPhase = Phase & { published: number; publishSeconds: number };

async function main(): Promise<void> {
  const latencyMs = numberSetting('--latency', 'BENCH_LATENCY_MS', 100);
  const concurrency = numberSetting('--concurrency', 'BENCH_CONCURRENCY', 64);
  const batches = numberSetting('--batches', 'BENCH_BATCHES', 3_000);
  const machine = machineAtStart();
  const scratch = await createScratch('latency');
  const sandbox = await startSandboxProcess(['--latency', String(latencyMs)], scratch.env);
  const pool = scratchPool(scratch);
  try {
    const env = { ...scratch.env, CLASSROOM_BASE_URL: sandbox.url, SYNC_CONCURRENCY: String(concurrency), CLASSROOM_RATE_LIMIT_PER_MINUTE: '1000000' };
    const worker = await startWorkerProcess(env);
    const config = loadConfig(env);
    const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
    const deps = publishDepsOf(runtime);
    try {
      const ideal = concurrency / ((3 * latencyMs) / 1000);
      const saturated = await throughputPhase(deps, pool, batches, worker.pid);
      const rate = saturated.perSecond / 2;
      const steady = await steadyPhase(deps, pool, rate, 'steady');
      const light = await steadyPhase(deps, pool, LIGHT_RATE, 'light');
      const state = await sandbox.state();
      report({ machine, latencyMs, concurrency, batches, ideal, saturated, rate, steady, light, remoteCalls: state.calls.totalCalls });
    } finally {
      await runtime.close();
      await worker.stop();
    }
  } finally {
    await pool.end();
    await sandbox.stop();
    await scratch.drop();
  }
}

interface Phase {
  perSecond: number;
  /** Over the steady part of phase 1: the worker's CPU in cores, and the machine's busy share (0..1). */
  workerCores?: number | undefined;
  machineBusy?: number | undefined;
  synced: number;
  unfinished: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Medians of: event → add-class sent (intake, queue, lease), and each call with the write after it. */
  stepsP50Ms: Record<string, number>;
}

async function throughputPhase(deps: PublishDeps, pool: pg.Pool, n: number, workerPid: number): Promise<Phase> {
  const events = benchEvents('sat', n);
  for (let i = 0; i < n; i += 1_000) await publishBatches(deps, events.slice(i, i + 1_000));
  const samples: { t: number; count: number; worker: number | undefined; machine: { busy: number; total: number } | undefined }[] = [];
  const deadline = performance.now() + 5 * 60_000;
  let synced = 0;
  while (performance.now() < deadline) {
    const t = performance.now();
    synced = await countSynced(pool, 'sat-%');
    samples.push({ t, count: synced, worker: processCpuSeconds(workerPid), machine: machineCpuSeconds() });
    if ((await countTerminal(pool, 'sat-%')) >= n) break;
    await sleep(Math.max(0, 250 - (performance.now() - t)));
  }
  // CPU over the same steady part the rate is fitted on.
  const steady = samples.filter((s) => s.count >= 0.1 * synced && s.count <= 0.9 * synced);
  const [first, last] = [steady[0], steady.at(-1)];
  const seconds = first && last ? (last.t - first.t) / 1000 : 0;
  const workerCores = first?.worker !== undefined && last?.worker !== undefined && seconds > 0 ? (last.worker - first.worker) / seconds : undefined;
  const machineBusy = first?.machine && last?.machine ? (last.machine.busy - first.machine.busy) / (last.machine.total - first.machine.total) : undefined;
  return {
    perSecond: steadyRate(samples),
    workerCores,
    machineBusy,
    synced,
    unfinished: n - (await countTerminal(pool, 'sat-%')),
    ...(await timesToSynced(pool, 'sat-%')),
  };
}

/** Publishes at `rate` per second for PHASE2_SECONDS (small groups every 20 ms), then waits. */
async function steadyPhase(deps: PublishDeps, pool: pg.Pool, rate: number, prefix: string): Promise<SteadyPhase> {
  const n = Math.max(50, Math.round(rate * PHASE2_SECONDS));
  const events = benchEvents(prefix, n);
  const like = `${prefix}-%`;
  const started = performance.now();
  await publishAtRate(deps, events, rate);
  const publishSeconds = (performance.now() - started) / 1000;
  const deadline = performance.now() + 3 * 60_000;
  while (performance.now() < deadline && (await countTerminal(pool, like)) < n) await sleep(250);
  return {
    perSecond: n / publishSeconds,
    published: n,
    publishSeconds: round(publishSeconds, 1),
    synced: await countSynced(pool, like),
    unfinished: n - (await countTerminal(pool, like)),
    ...(await timesToSynced(pool, like)),
  };
}

async function countSynced(pool: pg.Pool, like: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`select count(*) as n from batch_classes where state = 'synced' and batch_id like $1`, [like]);
  return Number(rows[0]!.n);
}

/** Time to synced, and the medians of its parts, from the timestamps each step stores. */
async function timesToSynced(pool: pg.Pool, like: string): Promise<{ p50Ms: number; p99Ms: number; maxMs: number; stepsP50Ms: Record<string, number> }> {
  const ms = (to: string, from: string) => `extract(epoch from (${to} - ${from})) * 1000`;
  const { rows } = await pool.query<Record<'total' | 'toCreate' | 'addClass' | 'editClass' | 'getClass', number>>(
    `select ${ms('synced_at', 'received_at')} as total,
            ${ms('create_sent_at', 'received_at')} as "toCreate",
            ${ms('class_created_at', 'create_sent_at')} as "addClass",
            ${ms('link_enabled_at', 'class_created_at')} as "editClass",
            ${ms('synced_at', 'link_enabled_at')} as "getClass"
       from batch_classes where state = 'synced' and batch_id like $1`,
    [like],
  );
  const column = (name: keyof (typeof rows)[number]) => rows.map((r) => Number(r[name]));
  const total = column('total');
  const stepsP50Ms = Object.fromEntries((['toCreate', 'addClass', 'editClass', 'getClass'] as const).map((k) => [k, round(quantile(column(k), 0.5), 1)]));
  return { p50Ms: round(quantile(total, 0.5)), p99Ms: round(quantile(total, 0.99)), maxMs: round(Math.max(...total)), stepsP50Ms };
}

function report(r: {
  machine: Machine;
  latencyMs: number;
  concurrency: number;
  batches: number;
  ideal: number;
  saturated: Phase;
  rate: number;
  steady: SteadyPhase;
  light: SteadyPhase;
  remoteCalls: number;
}): void {
  const ratio = r.saturated.perSecond / r.ideal;
  const bound = 3 * r.latencyMs + 30;
  const figures = {
    latencyMs: r.latencyMs,
    concurrency: r.concurrency,
    batches: r.batches,
    idealPerSecond: round(r.ideal, 1),
    throughputPerSecond: round(r.saturated.perSecond, 1),
    throughputRatio: round(ratio, 3),
    saturated: {
      ...r.saturated,
      perSecond: round(r.saturated.perSecond, 1),
      workerCores: round(r.saturated.workerCores ?? Number.NaN, 2),
      machineBusy: round(r.saturated.machineBusy ?? Number.NaN, 2),
    },
    steady: { ...r.steady, perSecond: round(r.steady.perSecond, 1) },
    light: { ...r.light, perSecond: round(r.light.perSecond, 1) },
    remoteCalls: r.remoteCalls,
  };
  publish({
    bench: 'latency',
    title: 'Latency bound (`bench/latency.ts`)',
    command: `npm run bench:latency -- --latency ${r.latencyMs} --concurrency ${r.concurrency} --batches ${r.batches}`,
    machine: machineAtEnd(r.machine),
    figures,
    rows: [
      {
        figure: 'batches per second ÷ C / (3·L)',
        value: `${ratio.toFixed(3)} (${r.saturated.perSecond.toFixed(1)}/s of an ideal ${r.ideal.toFixed(1)}/s; ${r.batches} batches at once)`,
        goal: '≥ 0.80',
        met: ratio >= 0.8,
      },
      {
        figure: 'event → synced p50, below saturation',
        value: `${r.steady.p50Ms} ms (${r.steady.published} batches at ${r.steady.perSecond.toFixed(1)}/s)`,
        goal: `≤ 3·L + 30 ms = ${bound} ms`,
        met: r.steady.p50Ms <= bound,
      },
      { figure: 'event → synced p99, below saturation', value: `${r.steady.p99Ms} ms (max ${r.steady.maxMs} ms)` },
      {
        figure: 'its parts (medians), below saturation',
        value: `event → add-class sent ${r.steady.stepsP50Ms.toCreate} ms, add-class ${r.steady.stepsP50Ms.addClass} ms, edit-class ${r.steady.stepsP50Ms.editClass} ms, get-class ${r.steady.stepsP50Ms.getClass} ms (each call with the writes around it)`,
      },
      {
        figure: 'event → synced p50 / p99, light load',
        value: `${r.light.p50Ms} / ${r.light.p99Ms} ms (${r.light.published} batches at ${r.light.perSecond.toFixed(1)}/s; parts: ${r.light.stepsP50Ms.toCreate} + ${r.light.stepsP50Ms.addClass} + ${r.light.stepsP50Ms.editClass} + ${r.light.stepsP50Ms.getClass} ms)`,
      },
      { figure: 'event → synced p50 / p99, all at once', value: `${r.saturated.p50Ms} / ${r.saturated.p99Ms} ms (queueing behind the others)` },
      {
        figure: 'worker CPU / machine busy, steady part',
        value: `${r.saturated.workerCores?.toFixed(2) ?? '?'} cores / ${r.saturated.machineBusy === undefined ? '?' : `${(100 * r.saturated.machineBusy).toFixed(0)} %`} of ${cpus().length} cores`,
      },
      { figure: 'unfinished batches', value: String(r.saturated.unfinished + r.steady.unfinished + r.light.unfinished) },
    ],
    notes: [
      `Sandbox (\`classroom-sync sandbox --latency ${r.latencyMs}\`, its own process, no rate limit); one \`classroom-sync worker\` process with SYNC_CONCURRENCY=${r.concurrency} (CLASSROOM_RATE_LIMIT_PER_MINUTE=1000000: the limiter still takes its Redis round trip per call, but never waits).`,
      `Throughput: ${r.batches} batches published at once; slope of the synced count (PostgreSQL, every 250 ms) between 10 % and 90 % of them.`,
      `Time to synced: \`synced_at − received_at\` (both PostgreSQL's clock) of batches published at a steady ${r.steady.perSecond.toFixed(1)}/s (half the measured throughput, so no batch waits for a job slot) for ${PHASE2_SECONDS} s; the goal is judged there. It includes intake (insert, enqueue), the job pickup, the three calls of L ms each and the recovery-point writes between them. Then the same at ${LIGHT_RATE}/s ("light load"), where neither the worker nor the machine is busy with this benchmark.`,
    ],
  });
}

await main();
