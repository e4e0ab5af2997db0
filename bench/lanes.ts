// Lanes under load: live batches arriving at a steady trickle while a backfill of thousands is
// queued, at a realistic rate limit.
//
//   npm run bench:lanes                                  # R = 600 calls/min, 3,000 backfill, live every 4 s for 120 s
//   npm run bench:lanes -- --rate 500 --backfill 5000 --seconds 180 --live-every 3000
//
// A sandbox (own process) answers after L = 150 ms (±50) and admits R calls per sliding minute,
// answering 429 beyond. Two `classroom-sync worker` processes share CLASSROOM_RATE_LIMIT_PER_MINUTE=R.
// First, on the idle system, 10 live batches one by one: how long a live batch takes when nothing
// else waits. Then the backfill is queued (`import`'s lane) and, once it runs, a live batch is
// published every few seconds for the measured window. Per lane: received → synced of the batches
// synced in the window; the calls per minute over the window against R, for the fleet and for each
// lane (the rate-limit slots the workers granted to it); the 429s the sandbox sent.
import { publishBatches } from '../src/intake/publish.ts';
import { createLogger } from '../src/logging/logger.ts';
import { loadConfig } from '../src/config/config.ts';
import { createRuntime, publishDepsOf } from '../src/runtime/runtime.ts';
import type { QueueLane } from '../src/mapping/index.ts';
import { type WorkerChild, startSandboxProcess, startWorkerProcess } from './support/processes.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, quantile, round, slope } from './support/report.ts';
import { benchEvents, createScratch, numberSetting, scratchPool, sleep } from './support/scratch.ts';

const WORKERS = 2;
const IDLE_SAMPLES = 10;

interface Times {
  n: number;
  p50: number;
  p95: number;
  max: number;
}

async function main(): Promise<void> {
  const rate = numberSetting('--rate', 'BENCH_RATE_LIMIT', 600);
  const backfill = numberSetting('--backfill', 'BENCH_BACKFILL', 3_000);
  const seconds = numberSetting('--seconds', 'BENCH_SECONDS', 120);
  const liveEveryMs = numberSetting('--live-every', 'BENCH_LIVE_EVERY_MS', 4_000);
  const machine = machineAtStart();
  const scratch = await createScratch('lanes');
  const sandbox = await startSandboxProcess(
    ['--rate-limit', String(rate), ...(process.env.BENCH_NO_LATENCY ? [] : ['--latency', '100', '--latency-jitter', '100'])],
    scratch.env,
  );
  const pool = scratchPool(scratch);
  const workers: WorkerChild[] = [];
  try {
    const env = { ...scratch.env, CLASSROOM_BASE_URL: sandbox.url, CLASSROOM_RATE_LIMIT_PER_MINUTE: String(rate) };
    workers.push(...(await Promise.all(Array.from({ length: WORKERS }, () => startWorkerProcess(env)))));
    const runtime = createRuntime(loadConfig(env), { logger: createLogger({ level: 'silent' }) });
    const deps = publishDepsOf(runtime);
    try {
      const start = new Date();
      await trickle(deps, pool, 'idle', IDLE_SAMPLES, 0);
      const idle = await times(pool, 'idle-%', start);
      const events = benchEvents('backfill', backfill);
      for (let i = 0; i < events.length; i += 1_000) await publishBatches(deps, events.slice(i, i + 1_000), { lane: 'backfill' });
      await waitForSynced(pool, 'backfill-%', 20);
      const window = await measureWindow({ deps, pool, sandbox, workers }, seconds, liveEveryMs);
      const live = await times(pool, 'live-%', window.started);
      const back = await times(pool, 'backfill-%', window.started);
      const perLane = await callsPerLane(pool, window.started, window.ended);
      const { samples, http429, slotsPerMinute } = window;
      report({ rate, backfill, seconds, liveEveryMs, machine, idle, live, back, perLane, slotsPerMinute, samples, http429 });
    } finally {
      await runtime.close();
    }
  } finally {
    await Promise.allSettled(workers.map((w) => w.stop()));
    await pool.end();
    await sandbox.stop();
    await scratch.drop();
  }
}

type Deps = ReturnType<typeof publishDepsOf>;
type Pool = ReturnType<typeof scratchPool>;
type Sandbox = Awaited<ReturnType<typeof startSandboxProcess>>;

/** Live batches published `everyMs` apart (or each once the previous is synced, when 0); their times. */
async function trickle(deps: Deps, pool: Pool, prefix: string, n: number, everyMs: number): Promise<string[]> {
  const ids: string[] = [];
  for (const event of benchEvents(prefix, n)) {
    const next = performance.now() + everyMs;
    await publishBatches(deps, [event]);
    ids.push(event.batchId);
    if (everyMs === 0) await waitForSynced(pool, event.batchId, 1);
    else await sleep(Math.max(0, next - performance.now()));
  }
  return ids;
}

/** The measured window: the live trickle, the sandbox's calls sampled every second, its 429s, slots per lane. */
async function measureWindow(on: { deps: Deps; pool: Pool; sandbox: Sandbox; workers: readonly WorkerChild[] }, seconds: number, liveEveryMs: number) {
  const { deps, pool, sandbox, workers } = on;
  const samples: { t: number; count: number }[] = [];
  const before = await sandbox.state();
  const slotsBefore = await slotsByLane(workers);
  const started = new Date();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.push({ t: performance.now(), count: (await sandbox.state()).calls.totalCalls });
      await sleep(1_000);
    }
  })();
  await trickle(deps, pool, 'live', Math.floor((seconds * 1000) / liveEveryMs), liveEveryMs);
  await waitForSynced(pool, 'live-%', Math.floor((seconds * 1000) / liveEveryMs));
  sampling = false;
  await sampler;
  const after = await sandbox.state();
  const ended = new Date();
  const slotsAfter = await slotsByLane(workers);
  const minutes = (ended.getTime() - started.getTime()) / 60_000;
  const slotsPerMinute = Object.fromEntries(LANES.map((lane) => [lane, (slotsAfter[lane] - slotsBefore[lane]) / minutes])) as Record<QueueLane, number>;
  return { started, ended, samples, http429: rejected(after) - rejected(before), slotsPerMinute };
}

const LANES = ['under_way', 'live', 'operator', 'backfill'] as const satisfies readonly QueueLane[];
const LANE_LABELS: Record<QueueLane, string> = { under_way: 'under way', live: 'live', operator: 'operator', backfill: 'backfill' };

/**
 * Rate-limit slots granted so far to each lane, summed over the workers' accounts: a lane's calls (a
 * batch's first call uses a slot of its own lane, every later call one of under way), plus the rare
 * slot a caller overslept and replaced, which the budget spent all the same.
 */
async function slotsByLane(workers: readonly WorkerChild[]): Promise<Record<QueueLane, number>> {
  const sums = Object.fromEntries(LANES.map((lane) => [lane, 0])) as Record<QueueLane, number>;
  for (const worker of workers) {
    const text = await (await fetch(`${worker.url}/metrics`)).text();
    for (const [, lane, value] of text.matchAll(/^classroom_sync_rate_limit_slots_total\{[^}]*lane="(\w+)"[^}]*\} (\S+)$/gm)) {
      if (lane! in sums) sums[lane as QueueLane] += Number(value);
    }
  }
  return sums;
}

function rejected(state: Awaited<ReturnType<Sandbox['state']>>): number {
  return Object.values(state.calls.byOperation).reduce((sum, op) => sum + (op.outcomes.rateLimited ?? 0), 0);
}

async function waitForSynced(pool: Pool, like: string, n: number): Promise<void> {
  for (;;) {
    const { rows } = await pool.query<{ n: string }>(`select count(*) as n from batch_classes where batch_id like $1 and state = 'synced'`, [like]);
    if (Number(rows[0]!.n) >= n) return;
    await sleep(100);
  }
}

/** Remote calls per minute in the window by the lane of the batch that made them (the audit trail's). */
async function callsPerLane(pool: Pool, from: Date, to: Date): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ lane: string; calls: string }>(
    `select b.lane, count(*) as calls from batch_events e join batch_classes b on b.id = e.batch_row_id
      where e.type = 'remote_call' and e.at >= $1 and e.at < $2 group by b.lane`,
    [from, to],
  );
  const minutes = (to.getTime() - from.getTime()) / 60_000;
  return Object.fromEntries(rows.map((r) => [r.lane, round(Number(r.calls) / minutes, 1)]));
}

/** received → synced (ms) of the batches matching `like` synced since `since`. */
async function times(pool: Pool, like: string, since: Date): Promise<Times> {
  const { rows } = await pool.query<{ ms: number }>(
    `select extract(epoch from (synced_at - received_at)) * 1000 as ms from batch_classes where batch_id like $1 and state = 'synced' and synced_at >= $2`,
    [like, since],
  );
  const ms = rows.map((r) => Number(r.ms));
  return { n: ms.length, p50: round(quantile(ms, 0.5)), p95: round(quantile(ms, 0.95)), max: round(Math.max(0, ...ms)) };
}

function report(r: {
  rate: number;
  backfill: number;
  seconds: number;
  liveEveryMs: number;
  machine: Machine;
  idle: Times;
  live: Times;
  back: Times;
  perLane: Record<string, number>;
  slotsPerMinute: Record<QueueLane, number>;
  samples: { t: number; count: number }[];
  http429: number;
}): void {
  const { slotsPerMinute, ...measured } = r;
  const perMinute = slope(r.samples.map((s) => ({ x: s.t / 60_000, y: s.count })));
  const use = perMinute / r.rate;
  const lateBy = r.live.p95 - r.idle.p95;
  const line = (t: Times) => `p50 ${t.p50} / p95 ${t.p95} / max ${t.max} ms (${t.n} batches)`;
  const lanes = Object.fromEntries(
    LANES.map((lane) => [lane, { callsPerMinute: round(slotsPerMinute[lane], 1), useOfRateLimit: round(slotsPerMinute[lane] / r.rate, 3) }]),
  );
  publish({
    bench: 'lanes',
    title: 'Lanes under a backfill (`bench/lanes.ts`)',
    command: `npm run bench:lanes -- --rate ${r.rate} --backfill ${r.backfill} --seconds ${r.seconds} --live-every ${r.liveEveryMs}`,
    machine: machineAtEnd(r.machine),
    figures: { ...measured, samples: r.samples.length, callsPerMinute: round(perMinute, 1), useOfRateLimit: round(use, 3), lanes },
    rows: [
      { figure: 'live, received → synced, idle system', value: line(r.idle) },
      {
        figure: 'live, received → synced, under the backfill',
        value: line(r.live),
        goal: 'p95 within 3 s of idle',
        met: lateBy <= 3_000 && r.live.n > 0,
      },
      { figure: 'backfill synced in the window', value: line(r.back) },
      {
        figure: 'calls per minute over the window ÷ R',
        value: `${use.toFixed(3)} (${perMinute.toFixed(0)}/min of R = ${r.rate})`,
        goal: '≥ 0.95',
        met: use >= 0.95,
      },
      ...LANES.map((lane) => ({
        figure: `lane ${LANE_LABELS[lane]}: calls per minute ÷ R`,
        value: `${lanes[lane]!.useOfRateLimit.toFixed(3)} (${lanes[lane]!.callsPerMinute.toFixed(0)}/min)`,
      })),
      { figure: 'HTTP 429 received', value: String(r.http429), goal: '0', met: r.http429 === 0 },
    ],
    notes: [
      `Sandbox (\`classroom-sync sandbox --rate-limit ${r.rate} --latency 100 --latency-jitter 100\`, its own process) answers each call after 100–200 ms and admits ${r.rate} calls per sliding minute; ${WORKERS} \`classroom-sync worker\` processes (SYNC_CONCURRENCY 8, CLASSROOM_RATE_LIMIT_PER_MINUTE=${r.rate}).`,
      `Idle: ${IDLE_SAMPLES} live batches one after another before anything else is queued. Then ${r.backfill} batches are queued in the backfill lane; once 20 have synced, a live batch is published every ${r.liveEveryMs / 1000} s for ${r.seconds} s. Calls per minute: least-squares slope of the sandbox's call counter, sampled every second over the window. Per lane: the rate-limit slots the workers granted to it over the window (\`classroom_sync_rate_limit_slots_total\`): a batch's first call is in its own lane, its later calls under way. (\`perLane\` in the JSON line counts calls by the lane stored with the batch that made them instead.)`,
    ],
  });
}

await main();
