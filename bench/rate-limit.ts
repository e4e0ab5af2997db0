// Rate-limit use: how much of the remote's call budget a fleet of workers actually uses.
//
//   npm run bench:rate-limit                          # R = 3,000 calls/min, 1,000 batches (about 70 s)
//   npm run bench:rate-limit -- --rate 500 --batches 300
//   BENCH_RATE_LIMIT=500 npm run bench:rate-limit
//
// A sandbox (own process, so its clock and event loop are its own) admits R authenticated calls per
// sliding minute and answers 429 beyond. Three `classroom-sync worker` processes share
// CLASSROOM_RATE_LIMIT_PER_MINUTE=R. The benchmark publishes the batches, samples the sandbox's call
// counter every 250 ms and fits its slope between 10 % and 90 % of the calls. The limiter schedules
// calls at 98 % of R on purpose (headroom for jitter), so 0.98 is the ceiling of "use of R".
import { loadConfig } from '../src/config/config.ts';
import { publishBatches } from '../src/intake/publish.ts';
import { createLogger } from '../src/logging/logger.ts';
import { createRuntime, publishDepsOf } from '../src/runtime/runtime.ts';
import type { SandboxState } from '../src/sandbox/index.ts';
import { type WorkerChild, scrapeSums, startSandboxProcess, startWorkerProcess } from './support/processes.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, round, steadyRate } from './support/report.ts';
import { benchEvents, createScratch, numberSetting, scratchPool, sleep } from './support/scratch.ts';

const WORKERS = 3;
const SAMPLE_EVERY_MS = 250;

async function main(): Promise<void> {
  const rate = numberSetting('--rate', 'BENCH_RATE_LIMIT', 3_000);
  const batches = numberSetting('--batches', 'BENCH_BATCHES', 1_000);
  const machine = machineAtStart();
  const scratch = await createScratch('rate-limit');
  const sandbox = await startSandboxProcess(['--rate-limit', String(rate)], scratch.env);
  const workers: WorkerChild[] = [];
  const pool = scratchPool(scratch);
  try {
    const env = { ...scratch.env, CLASSROOM_BASE_URL: sandbox.url, CLASSROOM_RATE_LIMIT_PER_MINUTE: String(rate) };
    workers.push(...(await Promise.all(Array.from({ length: WORKERS }, () => startWorkerProcess(env)))));
    const config = loadConfig(env);
    const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
    const samples: { t: number; count: number }[] = [];
    let started: number;
    let done: { synced: number; unfinished: number };
    try {
      started = performance.now();
      const events = benchEvents('rl', batches);
      const deps = publishDepsOf(runtime);
      for (let i = 0; i < events.length; i += 1_000) await publishBatches(deps, events.slice(i, i + 1_000));
      // The whole run at 98 % of R, twice over, plus a minute: a run that takes longer is broken.
      const deadline = started + 2 * ((3 * batches) / ((0.98 * rate) / 60_000)) + 60_000;
      done = await sampleUntilDone(sandbox.state, pool, batches, samples, deadline);
    } finally {
      await runtime.close();
    }
    const wallMs = performance.now() - started;
    const limiter = await limiterFigures(workers);
    await Promise.all(workers.map((w) => w.stop()));
    const state = await sandbox.state();
    report({ rate, batches, machine, samples, state, done, wallMs, limiter });
  } finally {
    await Promise.allSettled(workers.map((w) => w.stop()));
    await pool.end();
    await sandbox.stop();
    await scratch.drop();
  }
}

/** Samples the sandbox's call counter until every batch is terminal (or the deadline). */
async function sampleUntilDone(
  state: () => Promise<SandboxState>,
  pool: import('pg').Pool,
  batches: number,
  samples: { t: number; count: number }[],
  deadline: number,
): Promise<{ synced: number; unfinished: number }> {
  let lastCount = performance.now();
  let counts = { synced: 0, terminal: 0 };
  while (performance.now() < deadline) {
    const t = performance.now();
    samples.push({ t, count: (await state()).calls.totalCalls });
    if (t - lastCount >= 1_000) {
      lastCount = t;
      counts = await terminalCounts(pool);
      if (counts.terminal >= batches) break;
    }
    await sleep(Math.max(0, SAMPLE_EVERY_MS - (performance.now() - t)));
  }
  samples.push({ t: performance.now(), count: (await state()).calls.totalCalls });
  counts = await terminalCounts(pool);
  return { synced: counts.synced, unfinished: batches - counts.terminal };
}

async function terminalCounts(pool: import('pg').Pool): Promise<{ synced: number; terminal: number }> {
  const { rows } = await pool.query<{ synced: string; terminal: string }>(
    `select count(*) filter (where state = 'synced') as synced, count(*) filter (where state in ('synced', 'failed', 'needs_review')) as terminal from batch_classes`,
  );
  return { synced: Number(rows[0]!.synced), terminal: Number(rows[0]!.terminal) };
}

interface LimiterFigures {
  limiterWaitsPerCall: number;
}

/**
 * From the workers' own metrics: how often a call waited for its slot (a caller whose timer fired
 * more than one interval late takes a fresh slot: its old one goes unused).
 */
async function limiterFigures(workers: readonly WorkerChild[]): Promise<LimiterFigures> {
  const names = ['classroom_sync_rate_limit_wait_seconds_count', 'classroom_sync_remote_calls_total'] as const;
  const scraped = await Promise.all(workers.map((w) => scrapeSums(w.url, names)));
  const sum = (name: (typeof names)[number]) => scraped.reduce((s, m) => s + (m[name] ?? 0), 0);
  return { limiterWaitsPerCall: round(sum(names[0]) / sum(names[1]), 3) };
}

function report(r: {
  rate: number;
  batches: number;
  machine: Machine;
  samples: { t: number; count: number }[];
  state: SandboxState;
  done: { synced: number; unfinished: number };
  wallMs: number;
  limiter: LimiterFigures;
}): void {
  const calls = r.state.calls;
  const outcomes = Object.values(calls.byOperation).flatMap((op) => Object.entries(op.outcomes));
  const count = (name: string) => outcomes.filter(([k]) => k === name).reduce((s, [, v]) => s + v, 0);
  const throttled = count('rateLimited') + count('throttle') + count('throttleNoRetryAfter');
  const perMinute = steadyRate(r.samples) * 60;
  const use = perMinute / r.rate;
  const perBatch = r.done.synced > 0 ? calls.totalCalls / r.done.synced : Number.NaN;
  const duplicates = Object.values(r.state.byName).filter((n) => n > 1).length;
  const figures = {
    rateLimitPerMinute: r.rate,
    workers: WORKERS,
    batches: r.batches,
    synced: r.done.synced,
    unfinished: r.done.unfinished,
    remoteCalls: calls.totalCalls,
    steadyCallsPerMinute: round(perMinute, 1),
    useOfRateLimit: round(use, 4),
    http429: throttled,
    callsPerSyncedBatch: round(perBatch, 3),
    classesCreated: r.state.classCount,
    duplicateNames: duplicates,
    wallSeconds: round(r.wallMs / 1000, 1),
    samples: r.samples.length,
    ...r.limiter,
  };
  publish({
    bench: 'rate-limit',
    title: 'Rate-limit use (`bench/rate-limit.ts`)',
    command: `npm run bench:rate-limit -- --rate ${r.rate} --batches ${r.batches}`,
    machine: machineAtEnd(r.machine),
    figures,
    rows: [
      {
        figure: 'calls per minute over the steady part ÷ R',
        value: `${use.toFixed(3)} (${perMinute.toFixed(0)}/min of R = ${r.rate}; the limiter schedules at 0.98 R)`,
        goal: '≥ 0.97',
        met: use >= 0.97,
      },
      { figure: 'HTTP 429 received', value: String(throttled), goal: '0', met: throttled === 0 },
      {
        figure: 'remote calls per synced batch',
        value: `${perBatch.toFixed(2)} (${calls.totalCalls} calls, ${r.done.synced}/${r.batches} synced)`,
        goal: '3.00',
        met: perBatch === 3 && r.done.unfinished === 0,
      },
      { figure: 'classes created / duplicate names', value: `${r.state.classCount} / ${duplicates}` },
      { figure: 'wall time, publish to all synced', value: `${(r.wallMs / 1000).toFixed(1)} s` },
      { figure: 'limiter waits per remote call', value: `${r.limiter.limiterWaitsPerCall} (above 1: callers that overslept their slot and took a fresh one)` },
    ],
    notes: [
      `Sandbox (\`classroom-sync sandbox --rate-limit ${r.rate}\`, its own process) admits ${r.rate} calls per sliding minute; ${WORKERS} \`classroom-sync worker\` processes (PORT=0, SYNC_CONCURRENCY 8, CLASSROOM_RATE_LIMIT_PER_MINUTE=${r.rate}, RECONCILE_EVERY=0) sync ${r.batches} batches published at once.`,
      "Calls per minute: least-squares slope of the sandbox's call counter (`/__sandbox/state`, sampled every 250 ms) between 10 % and 90 % of the calls. The limiter spaces calls at 98 % of R on purpose (headroom for network jitter against a remote counting per sliding minute), so 0.980 is the ceiling.",
    ],
  });
}

await main();
