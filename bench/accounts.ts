// Several accounts, each at its own rate limit: does the fleet use every account's whole budget at
// once, so that throughput adds up to K × limit?
//
//   npm run bench:accounts                                   # K = 1, 4 and 16 accounts at R = 500 calls/min each, 60 s windows
//   npm run bench:accounts -- --accounts 4 --rate 300 --seconds 90
//
// For each K: an accounts file with K accounts (own credentials, own institute, ratePerMinute R); a
// sandbox (own process) that knows every key, answers after 100–200 ms and admits R calls per
// sliding minute per key, answering 429 beyond; two `classroom-sync worker` processes. A backlog of
// live batches spread evenly over the accounts, larger than the window can drain; once they run, the
// sandbox's per-key call counters are sampled every second for the window. Per account: calls per
// minute (least-squares slope) ÷ R, and the most calls its key made in any 60 s; for the fleet, the
// total ÷ K × R, and the 429s.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { publishBatches } from '../src/intake/publish.ts';
import { createLogger } from '../src/logging/logger.ts';
import { loadConfig } from '../src/config/config.ts';
import { createRuntime, publishDepsOf } from '../src/runtime/runtime.ts';
import { accountEntry, instituteOf } from '../test/helpers/accounts.ts';
import { type SandboxProcess, type WorkerChild, startSandboxProcess, startWorkerProcess } from './support/processes.ts';
import { type Machine, type Row, machineAtEnd, machineAtStart, publish, round, slope } from './support/report.ts';
import { argValue, benchEvents, createScratch, numberSetting, sleep } from './support/scratch.ts';

const WORKERS = 2;

interface Run {
  k: number;
  /** calls per minute ÷ R, per account. */
  use: Record<string, number>;
  fleetUse: number;
  callsPerMinute: number;
  peakPerMinute: number;
  http429: number;
  concurrency: number;
}

async function main(): Promise<void> {
  const rate = numberSetting('--rate', 'BENCH_RATE_LIMIT', 500);
  const seconds = numberSetting('--seconds', 'BENCH_SECONDS', 60);
  const only = argValue('--accounts');
  const ks = only ? [Number(only)] : [1, 4, 16];
  const machine = machineAtStart();
  const runs: Run[] = [];
  for (const k of ks) {
    runs.push(await measure(k, rate, seconds));
    console.error(`K=${k}: fleet ${runs.at(-1)!.fleetUse.toFixed(3)} of K × R`);
  }
  report(rate, seconds, machine, runs, only);
}

async function measure(k: number, rate: number, seconds: number): Promise<Run> {
  const scratch = await createScratch(`accounts-${k}`);
  const names = Array.from({ length: k }, (_, i) => `acct${String(i + 1).padStart(2, '0')}`);
  const file = join(process.env.TMPDIR ?? '/tmp', `${scratch.queuePrefix}-accounts.json`);
  writeFileSync(file, JSON.stringify({ accounts: names.map((name) => accountEntry({ name, ratePerMinute: rate })) }));
  const base = { ...scratch.env, CLASSROOM_ACCOUNTS_FILE: file };
  const sandbox = await startSandboxProcess(['--rate-limit', String(rate), '--latency', '100', '--latency-jitter', '100'], base);
  // Enough slots for every account to keep a call in flight and one waiting, with room to spare.
  const concurrency = Math.max(8, Math.ceil((4 * k) / WORKERS));
  const env = { ...base, CLASSROOM_BASE_URL: sandbox.url, SYNC_CONCURRENCY: String(concurrency) };
  const workers: WorkerChild[] = [];
  try {
    const runtime = createRuntime(loadConfig(env), { logger: createLogger({ level: 'silent' }) });
    try {
      // More than the window drains: R / 3 batches a minute per account, for the window and the warm-up.
      const perAccount = Math.ceil(((rate / 3) * (seconds + 30)) / 60);
      for (const name of names) {
        const events = benchEvents(name, perAccount).map((e) => ({ ...e, instituteId: instituteOf(name) }));
        for (let i = 0; i < events.length; i += 1_000) await publishBatches(publishDepsOf(runtime), events.slice(i, i + 1_000));
      }
    } finally {
      await runtime.close();
    }
    workers.push(...(await Promise.all(Array.from({ length: WORKERS }, () => startWorkerProcess(env)))));
    await sleep(10_000);
    return { k, concurrency, ...(await sample(sandbox, names, rate, seconds)) };
  } finally {
    await Promise.allSettled(workers.map((w) => w.stop()));
    await sandbox.stop();
    await scratch.drop();
    rmSync(file, { force: true });
  }
}

/** The window: every key's call counter each second; per-account and fleet rates, 429s, peaks. */
async function sample(sandbox: SandboxProcess, names: string[], rate: number, seconds: number) {
  const samples: { t: number; calls: Record<string, number> }[] = [];
  const before = await sandbox.state();
  const end = performance.now() + seconds * 1_000;
  while (performance.now() < end) {
    const state = await sandbox.state();
    samples.push({ t: performance.now(), calls: Object.fromEntries(names.map((n) => [n, state.calls.byAccount[n]?.calls ?? 0])) });
    await sleep(1_000);
  }
  const after = await sandbox.state();
  const perMinute = (name: string) => slope(samples.map((s) => ({ x: s.t / 60_000, y: s.calls[name] ?? 0 })));
  const use = Object.fromEntries(names.map((n) => [n, round(perMinute(n) / rate, 3)]));
  const callsPerMinute = names.reduce((sum, n) => sum + perMinute(n), 0);
  const limited = (state: typeof before) => Object.values(state.calls.byAccount).reduce((sum, a) => sum + (a.outcomes.rateLimited ?? 0), 0);
  return {
    use,
    fleetUse: round(callsPerMinute / (names.length * rate), 3),
    callsPerMinute: round(callsPerMinute, 1),
    peakPerMinute: Math.max(...names.map((n) => after.accounts[n]?.peakCallsPerWindow ?? 0)),
    http429: limited(after) - limited(before),
  };
}

function report(rate: number, seconds: number, machine: Machine, runs: Run[], only: string | undefined): void {
  const rows: Row[] = runs.flatMap((run) => {
    const uses = Object.values(run.use);
    const lowest = Math.min(...uses);
    return [
      {
        figure: `K = ${run.k}: calls/min ÷ R, per account (lowest / highest)`,
        value: `${lowest.toFixed(3)} / ${Math.max(...uses).toFixed(3)}`,
        goal: '≥ 0.95 each',
        met: lowest >= 0.95,
      },
      {
        figure: `K = ${run.k}: fleet calls/min ÷ K × R`,
        value: `${run.fleetUse.toFixed(3)} (${run.callsPerMinute.toFixed(0)}/min; ${(run.callsPerMinute / 3).toFixed(0)} batches/min)`,
      },
      {
        figure: `K = ${run.k}: HTTP 429; most calls of one key in any 60 s`,
        value: `${run.http429}; ${run.peakPerMinute} (R = ${rate})`,
        goal: '0; ≤ R',
        met: run.http429 === 0 && run.peakPerMinute <= rate,
      },
    ];
  });
  publish({
    bench: 'accounts',
    title: 'Several accounts, each at its own limit (`bench/accounts.ts`)',
    command: `npm run bench:accounts -- --rate ${rate} --seconds ${seconds}${only ? ` --accounts ${only}` : ''}`,
    machine: machineAtEnd(machine),
    figures: { rate, seconds, runs },
    rows,
    notes: [
      `Per K: K accounts in CLASSROOM_ACCOUNTS_FILE, each with its own credentials, its own institute and ratePerMinute ${rate}; a sandbox (\`classroom-sync sandbox --rate-limit ${rate} --latency 100 --latency-jitter 100\`, its own process) that knows every key, answers after 100–200 ms and admits ${rate} calls per sliding minute per key; ${WORKERS} \`classroom-sync worker\` processes with SYNC_CONCURRENCY ${runs.map((r) => `${r.concurrency} (K = ${r.k})`).join(', ')}.`,
      `A backlog of live batches per account larger than the window drains; after 10 s of warm-up, each key's call counter is sampled every second for ${seconds} s: calls per minute is the least-squares slope. "Most calls in any 60 s" is the sandbox's own count per key over the whole run (its sliding window).`,
    ],
  });
}

await main();
