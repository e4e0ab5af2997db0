// The /metrics guard: do 100 scrapers hammering /metrics slow the batches down?
//
//   npm run bench:metrics                                    # 100 scrapers, 20 s, 10 batches/s, L = 50 ms, 2 rounds
//   npm run bench:metrics -- --scrapers 200 --seconds 30 --rate 20 --latency 100 --rounds 1
//
// The sandbox (own process) answers every call after L ms and admits any rate; one
// `classroom-sync worker` process syncs. In one run, after an unmeasured warm-up, phases of S
// seconds each in which batches are published at a steady rate R:
//   - quiet: nothing scrapes;
//   - scraped: K scrapers (a process of their own, each asking again as soon as it has its answer,
//     as a storm of Prometheus servers, dashboards and curl loops would) scrape /metrics for the S
//     seconds.
// Phases go quiet, scraped, scraped, quiet, … (`rounds` of each), so drift in the machine's load
// falls on both sides. Time to synced is `synced_at − received_at` of each batch (both PostgreSQL's
// clock), pooled per kind. The goal: the scraped p95 at most 1.5 × the quiet p95. The scrapers
// share the machine with the worker, so their own CPU counts against the goal too.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { loadConfig } from '../src/config/config.ts';
import type { PublishDeps } from '../src/intake/publish.ts';
import { createLogger } from '../src/logging/logger.ts';
import { SCRAPE_REUSE_MS, SCRAPE_SPACING_MS } from '../src/metrics/scrape-guard.ts';
import { createRuntime, publishDepsOf } from '../src/runtime/runtime.ts';
import { processCpuSeconds, startSandboxProcess, startWorkerProcess } from './support/processes.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, quantile, round } from './support/report.ts';
import { benchEvents, createScratch, numberSetting, scratchPool, sleep } from './support/scratch.ts';
import { countTerminal, publishAtRate } from './support/steady.ts';

const SELF = fileURLToPath(import.meta.url);
const GOAL_RATIO = 1.5;
/** How long a phase waits for its last batches once publishing is over. */
const SETTLE_BOUND_MS = 2 * 60_000;

interface Settings {
  scrapers: number;
  seconds: number;
  rate: number;
  latencyMs: number;
  rounds: number;
}

/** Times to synced (ms) of one kind of phase, pooled; and their event → add-class sent. */
interface Times {
  published: number;
  totalMs: number[];
  toCreateMs: number[];
}

interface Scraping {
  scrapes: number;
  seconds: number;
  /** Answers other than 200, and requests that failed outright. */
  failed: number;
  /** classroom_sync_scrape_refreshes_total over the scraped phases (with the counting scrapes' own). */
  postgresReads: number;
  redisReads: number;
  /** The worker's CPU seconds while scraped. */
  workerCpuSeconds: number | undefined;
}

async function main(): Promise<void> {
  const settings: Settings = {
    scrapers: numberSetting('--scrapers', 'BENCH_SCRAPERS', 100),
    seconds: numberSetting('--seconds', 'BENCH_SECONDS', 20),
    rate: numberSetting('--rate', 'BENCH_RATE', 10),
    latencyMs: numberSetting('--latency', 'BENCH_LATENCY_MS', 50),
    rounds: numberSetting('--rounds', 'BENCH_ROUNDS', 2),
  };
  const machine = machineAtStart();
  const scratch = await createScratch('metrics-guard');
  const sandbox = await startSandboxProcess(['--latency', String(settings.latencyMs)], scratch.env);
  const pool = scratchPool(scratch);
  try {
    const env = { ...scratch.env, CLASSROOM_BASE_URL: sandbox.url, CLASSROOM_RATE_LIMIT_PER_MINUTE: '1000000' };
    const worker = await startWorkerProcess(env);
    const runtime = createRuntime(loadConfig(env), { logger: createLogger({ level: 'silent' }) });
    const deps = publishDepsOf(runtime);
    try {
      await steadyPhase(deps, pool, 'warm', settings.rate, 5);
      const quiet: Times = { published: 0, totalMs: [], toCreateMs: [] };
      const scraped: Times = { published: 0, totalMs: [], toCreateMs: [] };
      const scraping: Scraping = { scrapes: 0, seconds: 0, failed: 0, postgresReads: 0, redisReads: 0, workerCpuSeconds: 0 };
      const order = Array.from({ length: settings.rounds }, (_, i) => (i % 2 === 0 ? ['quiet', 'scraped'] : ['scraped', 'quiet'])).flat();
      for (const [i, kind] of order.entries()) {
        const prefix = `${kind}-${i}`;
        if (kind === 'quiet') add(quiet, await steadyPhase(deps, pool, prefix, settings.rate, settings.seconds));
        else add(scraped, await scrapedPhase(deps, pool, prefix, settings, worker, scraping));
      }
      report(machine, settings, quiet, scraped, scraping);
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

function add(into: Times, phase: Times): void {
  into.published += phase.published;
  into.totalMs.push(...phase.totalMs);
  into.toCreateMs.push(...phase.toCreateMs);
}

/** A steady phase while the scrapers run for the same S seconds; adds their tally to `scraping`. */
async function scrapedPhase(
  deps: PublishDeps,
  pool: pg.Pool,
  prefix: string,
  s: Settings,
  worker: { url: string; pid: number },
  scraping: Scraping,
): Promise<Times> {
  const before = await refreshCounts(worker.url);
  const cpuBefore = processCpuSeconds(worker.pid);
  const storm = startScrapers(worker.url, s.scrapers, s.seconds);
  const phase = steadyPhase(deps, pool, prefix, s.rate, s.seconds);
  const tally = await storm;
  const cpuAfter = processCpuSeconds(worker.pid);
  const times = await phase;
  const after = await refreshCounts(worker.url);
  scraping.scrapes += tally.scrapes;
  scraping.seconds += tally.seconds;
  scraping.failed += tally.failed;
  scraping.postgresReads += after.postgres - before.postgres;
  scraping.redisReads += after.redis - before.redis;
  scraping.workerCpuSeconds =
    cpuBefore !== undefined && cpuAfter !== undefined && scraping.workerCpuSeconds !== undefined ? scraping.workerCpuSeconds + cpuAfter - cpuBefore : undefined;
  return times;
}

/** Publishes `rate` batches a second for `seconds` (small groups every 20 ms), then waits for them. */
async function steadyPhase(deps: PublishDeps, pool: pg.Pool, prefix: string, rate: number, seconds: number): Promise<Times> {
  const n = Math.max(1, Math.round(rate * seconds));
  const events = benchEvents(prefix, n);
  await publishAtRate(deps, events, rate);
  const like = `${prefix}-%`;
  const deadline = performance.now() + SETTLE_BOUND_MS;
  while (performance.now() < deadline && (await countTerminal(pool, like)) < n) await sleep(250);
  const { rows } = await pool.query<{ ms: number; toCreate: number }>(
    `select extract(epoch from (synced_at - received_at)) * 1000 as ms, extract(epoch from (create_sent_at - received_at)) * 1000 as "toCreate"
       from batch_classes where state = 'synced' and batch_id like $1`,
    [like],
  );
  return { published: n, totalMs: rows.map((r) => Number(r.ms)), toCreateMs: rows.map((r) => Number(r.toCreate)) };
}

interface ScrapeTally {
  scrapes: number;
  failed: number;
  seconds: number;
}

/**
 * `count` scrapers for `seconds`, in a process of their own (this file with --scrapers-child): a
 * scraper is another program on another machine, and in this process its work would delay the
 * enqueueing of the very batches being timed.
 */
function startScrapers(url: string, count: number, seconds: number): Promise<ScrapeTally> {
  const child = fork(SELF, ['--scrapers-child'], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_SCRAPE_URL: url, BENCH_SCRAPERS: String(count), BENCH_SECONDS: String(seconds) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (tally) => resolve(tally as ScrapeTally));
    child.once('exit', (code) => reject(new Error(`the scrapers' process exited with ${code} before reporting`)));
  });
}

/** The child: each scraper asks again as soon as it has read its answer, until the time is up. */
async function scrapersChild(): Promise<void> {
  const url = process.env.BENCH_SCRAPE_URL!;
  const until = performance.now() + Number(process.env.BENCH_SECONDS) * 1000;
  const tally: ScrapeTally = { scrapes: 0, failed: 0, seconds: 0 };
  const started = performance.now();
  const loops = Array.from({ length: Number(process.env.BENCH_SCRAPERS) }, async () => {
    while (performance.now() < until) {
      try {
        const response = await fetch(`${url}/metrics`);
        await response.arrayBuffer();
        if (response.status !== 200) tally.failed += 1;
      } catch {
        tally.failed += 1;
      }
      tally.scrapes += 1;
    }
  });
  await Promise.all(loops);
  tally.seconds = (performance.now() - started) / 1000;
  process.send!(tally, () => process.exit(0));
}

/** classroom_sync_scrape_refreshes_total by source, from one scrape. */
async function refreshCounts(url: string): Promise<{ postgres: number; redis: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const of = (source: string) =>
    Number(new RegExp(`^classroom_sync_scrape_refreshes_total\\{source="${source}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { postgres: of('postgres'), redis: of('redis') };
}

/** p50 / p95 / max of a kind's times, and its median event → add-class sent. */
function summary(t: Times) {
  const q = (p: number) => round(quantile(t.totalMs, p));
  return {
    published: t.published,
    synced: t.totalMs.length,
    p50Ms: q(0.5),
    p95Ms: q(0.95),
    maxMs: round(Math.max(...t.totalMs)),
    toCreateP50Ms: round(quantile(t.toCreateMs, 0.5)),
  };
}

function report(machine: Machine, s: Settings, quietTimes: Times, scrapedTimes: Times, scraping: Scraping): void {
  const [quiet, scraped] = [summary(quietTimes), summary(scrapedTimes)];
  const ratio = scraped.p95Ms / quiet.p95Ms;
  const line = (t: ReturnType<typeof summary>) =>
    `${t.p50Ms} / ${t.p95Ms} / ${t.maxMs} ms (${t.synced} of ${t.published} synced; event → add-class sent p50 ${t.toCreateP50Ms} ms)`;
  const cores = scraping.workerCpuSeconds === undefined ? '?' : (scraping.workerCpuSeconds / scraping.seconds).toFixed(2);
  publish({
    bench: 'metrics-guard',
    title: 'The /metrics guard (`bench/metrics-guard.ts`)',
    command: `npm run bench:metrics -- --scrapers ${s.scrapers} --seconds ${s.seconds} --rate ${s.rate} --latency ${s.latencyMs} --rounds ${s.rounds}`,
    machine: machineAtEnd(machine),
    figures: { ...s, quiet, scraped, ratio: round(ratio, 3), scraping: { ...scraping, seconds: round(scraping.seconds, 1) } },
    rows: [
      {
        figure: 'event → synced p95, scraped ÷ quiet',
        value: `${ratio.toFixed(3)} (${scraped.p95Ms} ms with ${s.scrapers} scrapers, ${quiet.p95Ms} ms without)`,
        goal: `≤ ${GOAL_RATIO}`,
        met: ratio <= GOAL_RATIO,
      },
      { figure: 'event → synced p50 / p95 / max, quiet', value: line(quiet) },
      { figure: 'event → synced p50 / p95 / max, scraped', value: line(scraped) },
      {
        figure: 'scrapes',
        value: `${scraping.scrapes} in ${scraping.seconds.toFixed(0)} s (${(scraping.scrapes / scraping.seconds).toFixed(0)}/s), ${scraping.failed} not answered 200`,
      },
      {
        figure: 'reads behind them',
        value: `PostgreSQL ${scraping.postgresReads}, Redis ${scraping.redisReads} (with the counting scrapes' own); worker CPU ${cores} cores while scraped`,
      },
    ],
    notes: [
      `Sandbox (\`classroom-sync sandbox --latency ${s.latencyMs}\`, its own process, no rate limit); one \`classroom-sync worker\` process with the default SYNC_CONCURRENCY (CLASSROOM_RATE_LIMIT_PER_MINUTE=1000000).`,
      `${s.rate} batches/s published for ${s.seconds} s a phase (after ${5 * s.rate} unmeasured warm-up batches), ${s.rounds} quiet and ${s.rounds} scraped phases taking turns (quiet, scraped, scraped, quiet, …); while scraped, ${s.scrapers} scrapers in a process of their own ask /metrics again as soon as they have an answer, for the phase's ${s.seconds} s.`,
      `Time to synced: \`synced_at − received_at\` of each batch (both PostgreSQL's clock), pooled over the phases of a kind. The reads are the worker's \`classroom_sync_scrape_refreshes_total\` over the scraped phases: PostgreSQL at most once every ${SCRAPE_REUSE_MS / 1000} s on its own connection; answers (and with them the Redis reads) at most once every ${SCRAPE_SPACING_MS} ms, shared by every scrape waiting.`,
    ],
  });
}

if (process.argv.includes('--scrapers-child')) await scrapersChild();
else await main();
