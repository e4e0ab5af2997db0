// Intake: how fast batch-created events are recorded and queued, through the HTTP API and through
// `classroom-sync enqueue`, beside BullMQ's own `addBulk` on the same Redis.
//
//   npm run bench:intake                     # 20,000 events per path, 3 rounds
//   npm run bench:intake -- --events 50000
//   npm run bench:intake -- --profile FILE   # CPU profile of the HTTP server over the POST runs
//
// - publishBatches (the library call) in this process, 500 per call: intake without HTTP or a CLI.
// - POST /v1/batches, arrays of 500, one request in flight and then four: served by a child process
//   running the worker's HTTP server (createHttpServer over createRuntime) without the sync worker,
//   so nothing else competes for the CPU; the benchmark is the HTTP client.
// - `classroom-sync enqueue FILE` (the compiled CLI, dist/cli/main.js, in a child process with plain
//   node) on a generated NDJSON file: wall time of the whole process, and again without its
//   start-up (an enqueue of an empty file).
// - Start-up: `classroom-sync --version` beside a bare `node -e 0`, each run in turn (goal: ≤ 3 ×).
// - addBulk: BullMQ's Queue.addBulk with the same job ids, data and options, 500 per call, one call
//   in flight, on a queue prefix of its own.
// The paths take turns, round after round (default 3), and the medians are reported: on a shared
// machine the load changes within a minute, and this way it changes for all paths alike.
// Every event is a new batch (a PostgreSQL insert and an audit row), and no worker takes the jobs.
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config/config.ts';
import { createHttpServer } from '../src/http/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { createMetrics } from '../src/metrics/metrics.ts';
import { createRuntime, publishDepsOf } from '../src/runtime/runtime.ts';
import { publishBatches } from '../src/intake/publish.ts';
import { CLI, addBulkRate, runCli } from './support/enqueue.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, quantile, round } from './support/report.ts';
import { argValue, benchEvents, createScratch, numberSetting, scratchPool } from './support/scratch.ts';
import { httpSettingsOf } from '../src/http/settings.ts';

const PER_POST = 500;
const STARTUP_RUNS = 15;
const TOKEN = 'bench-intake-token-0123456789abcdef';

async function main(): Promise<void> {
  const n = numberSetting('--events', 'BENCH_EVENTS', 20_000);
  const rounds = numberSetting('--rounds', 'BENCH_ROUNDS', 3);
  const machine = machineAtStart();
  const scratch = await createScratch('intake');
  const addBulkPrefix = `${scratch.queuePrefix}-addbulk`;
  const dir = mkdtempSync(join(tmpdir(), 'cs-bench-intake-'));
  const env = { ...scratch.env, API_TOKEN: TOKEN };
  const pool = scratchPool(scratch);
  const server = await startServerChild(env, argValue('--profile'));
  try {
    const empty = join(dir, 'empty.ndjson');
    writeFileSync(empty, '');
    // The paths take turns, so a change of load between them hits all alike; medians are reported.
    const runs: Round[] = [];
    for (let r = 1; r <= rounds; r++) {
      const file = join(dir, `events-${r}.ndjson`);
      writeFileSync(
        file,
        `${benchEvents(`cli${r}`, n)
          .map((e) => JSON.stringify(e))
          .join('\n')}\n`,
      );
      const addBulk = await addBulkRate(env, addBulkPrefix, `ab${r}`, n);
      const library = await libraryRate(env, `lib${r}`, n);
      const post1 = await postRate(server.url, `p1r${r}`, n, 1);
      const post4 = await postRate(server.url, `p4r${r}`, n, 4);
      const cliMs = await runEnqueue(env, file);
      const startupMs = await runEnqueue(env, empty);
      runs.push({ addBulk, library, post1, post4, cli: n / (cliMs / 1000), cliNoStartup: n / ((cliMs - startupMs) / 1000), startupMs });
    }
    const { rows } = await pool.query<{ n: string }>(`select count(*) as n from batch_classes`);
    report({ machine, n, rounds, recorded: Number(rows[0]!.n), runs, startup: await startupTimes() });
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    await pool.end();
    await scratch.drop([addBulkPrefix]);
  }
}

interface Round {
  addBulk: number;
  library: number;
  post1: number;
  post4: number;
  cli: number;
  cliNoStartup: number;
  startupMs: number;
}

/** Events per second through `publishBatches` in this process, PER_POST per call: intake without HTTP or CLI. */
async function libraryRate(env: Record<string, string>, idPrefix: string, n: number): Promise<number> {
  const config = loadConfig(env);
  const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
  const deps = publishDepsOf(runtime);
  try {
    await runtime.queue.waitUntilReady();
    const events = benchEvents(idPrefix, n);
    const started = performance.now();
    for (let i = 0; i < n; i += PER_POST) await publishBatches(deps, events.slice(i, i + PER_POST));
    return n / ((performance.now() - started) / 1000);
  } finally {
    await runtime.close();
  }
}

/** Events per second through POST /v1/batches, PER_POST per request, `inFlight` requests at a time. */
async function postRate(url: string, idPrefix: string, n: number, inFlight: number): Promise<number> {
  const events = benchEvents(idPrefix, n);
  const bodies: string[] = [];
  for (let i = 0; i < n; i += PER_POST) bodies.push(JSON.stringify(events.slice(i, i + PER_POST)));
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const response = await fetch(`${url}/v1/batches`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body,
        });
        if (response.status !== 202) throw new Error(`POST /v1/batches answered ${response.status}: ${await response.text()}`);
        await response.arrayBuffer();
      }
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

/** Wall time of `classroom-sync enqueue FILE`, start to exit. */
const runEnqueue = (env: Record<string, string>, file: string) => runCli(env, ['enqueue', file]);

/** Wall time of one process, spawn to exit. */
async function timeProcess(args: string[]): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited with ${code}`);
  return performance.now() - started;
}

/** `classroom-sync --version` and a bare `node -e 0`, taking turns; the medians. */
async function startupTimes(): Promise<Startup> {
  const version: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < STARTUP_RUNS; i++) {
    version.push(await timeProcess([CLI, '--version']));
    bare.push(await timeProcess(['-e', '0']));
  }
  return { versionMs: quantile(version, 0.5), bareMs: quantile(bare, 0.5) };
}

interface Startup {
  versionMs: number;
  bareMs: number;
}

async function startServerChild(env: Record<string, string>, profile: string | undefined): Promise<{ url: string; stop(): Promise<void> }> {
  const args = ['--server-child', ...(profile ? ['--profile', resolve(profile)] : [])];
  const child = fork(fileURLToPath(import.meta.url), args, { execArgv: ['--import', 'tsx'], env: { ...process.env, ...env } });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (m) => resolve(m as string));
    child.once('exit', (code) => reject(new Error(`intake server exited with ${code}`)));
  });
  return {
    url,
    async stop() {
      child.send('stop');
      await exited;
    },
  };
}

/** The intake half of a worker: the HTTP server with POST /v1/batches, no sync worker. */
async function serverChild(): Promise<void> {
  const config = loadConfig(process.env);
  const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
  const http = await createHttpServer({ ...runtime, httpSettings: httpSettingsOf(runtime.config), metrics: createMetrics(), publish: publishDepsOf(runtime) });
  const url = await http.listen({ port: 0, host: '127.0.0.1' });
  const profile = argValue('--profile');
  const session = profile ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  process.on('message', (m) => {
    if (m !== 'stop') return;
    const written = session ? session.post('Profiler.stop').then(({ profile: p }) => writeFileSync(profile!, JSON.stringify(p))) : Promise.resolve();
    void written
      .then(() => http.close())
      .then(() => runtime.close())
      .then(() => process.exit(0));
  });
  process.send!(url);
}

function report(r: { machine: Machine; n: number; rounds: number; recorded: number; runs: Round[]; startup: Startup }): void {
  const median = (key: keyof Round) =>
    quantile(
      r.runs.map((run) => run[key]),
      0.5,
    );
  const addBulk = median('addBulk');
  const share = (rate: number) => rate / addBulk;
  const each = (key: keyof Round) => r.runs.map((run) => run[key].toFixed(0)).join(', ');
  const row = (figure: string, key: keyof Round, goal = true) => ({
    figure,
    value: `${median(key).toFixed(0)} events/s = ${share(median(key)).toFixed(2)} × addBulk (rounds: ${each(key)})`,
    ...(goal ? { goal: '≥ 0.5 × addBulk', met: share(median(key)) >= 0.5 } : {}),
  });
  const figures = Object.fromEntries(
    (['addBulk', 'library', 'post1', 'post4', 'cli', 'cliNoStartup', 'startupMs'] as const).map((k) => [
      k,
      { median: round(median(k)), rounds: r.runs.map((run) => round(run[k])) },
    ]),
  );
  publish({
    bench: 'intake',
    title: 'Intake (`bench/intake.ts`)',
    command: `npm run bench:intake -- --events ${r.n} --rounds ${r.rounds}`,
    machine: machineAtEnd(r.machine),
    figures: {
      events: r.n,
      rounds: r.rounds,
      recorded: r.recorded,
      ...figures,
      postToAddBulk: round(share(median('post1')), 2),
      enqueueToAddBulk: round(share(median('cli')), 2),
      versionMs: round(r.startup.versionMs),
      bareNodeMs: round(r.startup.bareMs),
      versionToBareNode: round(r.startup.versionMs / r.startup.bareMs, 2),
    },
    rows: [
      { figure: 'BullMQ addBulk (500 per call)', value: `${addBulk.toFixed(0)} jobs/s (rounds: ${each('addBulk')})` },
      row('publishBatches in-process, 500 per call', 'library', false),
      row('POST /v1/batches, 500 per request', 'post1'),
      row('POST /v1/batches, 4 requests in flight', 'post4', false),
      row('classroom-sync enqueue, whole process', 'cli'),
      row('classroom-sync enqueue, without start-up', 'cliNoStartup', false),
      { figure: 'enqueue start-up and exit (empty file)', value: `${(median('startupMs') / 1000).toFixed(2)} s` },
      {
        figure: '`classroom-sync --version` ÷ bare `node -e 0`',
        value: `${(r.startup.versionMs / r.startup.bareMs).toFixed(2)} (${r.startup.versionMs.toFixed(0)} ms ÷ ${r.startup.bareMs.toFixed(0)} ms, medians of ${STARTUP_RUNS})`,
        goal: '≤ 3',
        met: r.startup.versionMs / r.startup.bareMs <= 3,
      },
      { figure: 'batches recorded', value: `${r.recorded} of ${4 * r.n * r.rounds}` },
    ],
    notes: [
      `${r.n} new events per path and round, ${r.rounds} rounds; the paths take turns within each round and the medians are shown. Each accepted event is a PostgreSQL row plus its first audit row (one statement per chunk; states are read back only for batches already known) and a BullMQ job (addBulk); no worker consumes the jobs.`,
      "publishBatches: the library call in the benchmark's own process, 500 events per call, one at a time: validation, one INSERT of rows and audit rows, then addBulk (recorded before queued, so the two never overlap).",
      'POST: a child process running the worker\'s HTTP server only (no sync worker), the benchmark as client, one request in flight (and four, for comparison). enqueue: `node dist/cli/main.js enqueue FILE` (the compiled CLI, plain node) timed from spawn to exit; "without start-up" subtracts the time of the same command on an empty file (loading the code, connecting, closing).',
      `Start-up: \`node dist/cli/main.js --version\` and \`node -e 0\`, ${STARTUP_RUNS} times each in turn, spawn to exit; medians.`,
      'addBulk: `Queue.addBulk` of the same job shape (id, data, options), 500 per call, one call at a time, on its own queue prefix.',
    ],
  });
}

if (process.argv.includes('--server-child')) await serverChild();
else await main();
