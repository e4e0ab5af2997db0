// Intake: how fast batch-created events are recorded and queued, through the HTTP API and through
// `classroom-sync enqueue`, beside BullMQ's own `addBulk` on the same Redis.
//
//   npm run bench:intake                     # 20,000 events per path
//   npm run bench:intake -- --events 50000
//   npm run bench:intake -- --profile FILE   # CPU profile of the HTTP server over the POST runs
//
// - POST /v1/batches, arrays of 500, one request in flight and then four: served by a child process
//   running the worker's HTTP server (createHttpServer over createRuntime) without the sync worker,
//   so nothing else competes for the CPU; the benchmark is the HTTP client.
// - `classroom-sync enqueue FILE` (the real CLI, a child process) on a generated NDJSON file: wall
//   time of the whole process, and again without its start-up (an enqueue of an empty file).
// - addBulk: BullMQ's Queue.addBulk with the same job ids, data and options, 500 per call, one call
//   in flight, on a queue prefix of its own; run before and after the paths above (mean used).
// Every event is a new batch (a PostgreSQL insert and an audit row), and no worker takes the jobs.
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.ts';
import { createHttpServer } from '../src/http/server.ts';
import { createLogger } from '../src/logger.ts';
import { createMetrics } from '../src/metrics/metrics.ts';
import { createRedis } from '../src/redis.ts';
import { createRuntime } from '../src/runtime.ts';
import { createSyncQueue, syncJob } from '../src/sync/queue.ts';
import { BIN } from './support/processes.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, round } from './support/report.ts';
import { argValue, benchEvents, createScratch, numberSetting, scratchPool } from './support/scratch.ts';

const PER_POST = 500;
const TOKEN = 'bench-intake-token-0123456789';

async function main(): Promise<void> {
  const n = numberSetting('--events', 'BENCH_EVENTS', 20_000);
  const machine = machineAtStart();
  const scratch = await createScratch('intake');
  const addBulkPrefix = `${scratch.queuePrefix}-addbulk`;
  const dir = mkdtempSync(join(tmpdir(), 'cs-bench-intake-'));
  const env = { ...scratch.env, API_TOKEN: TOKEN };
  const pool = scratchPool(scratch);
  try {
    const addBulkBefore = await addBulkRate(env, addBulkPrefix, 'ab1', n);
    const server = await startServerChild(env, argValue('--profile'));
    let post1: number;
    let post4: number;
    try {
      post1 = await postRate(server.url, 'p1', n, 1);
      post4 = await postRate(server.url, 'p4', n, 4);
    } finally {
      await server.stop();
    }
    const file = join(dir, 'events.ndjson');
    writeFileSync(file, `${benchEvents('cli', n).map((e) => JSON.stringify(e)).join('\n')}\n`);
    writeFileSync(join(dir, 'empty.ndjson'), '');
    const cliMs = await runEnqueue(env, file);
    const startupMs = await runEnqueue(env, join(dir, 'empty.ndjson'));
    const addBulkAfter = await addBulkRate(env, addBulkPrefix, 'ab2', n);
    const { rows } = await pool.query<{ n: string }>(`select count(*) as n from batch_classes`);
    report({
      machine,
      n,
      recorded: Number(rows[0]!.n),
      addBulk: [addBulkBefore, addBulkAfter],
      post1,
      post4,
      cli: n / (cliMs / 1000),
      cliNoStartup: n / ((cliMs - startupMs) / 1000),
      startupMs,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await pool.end();
    await scratch.drop([addBulkPrefix]);
  }
}

/** Jobs per second through Queue.addBulk, PER_POST per call, one call at a time. */
async function addBulkRate(env: Record<string, string>, prefix: string, idPrefix: string, n: number): Promise<number> {
  const config = loadConfig(env);
  const redis = createRedis(config.redisUrl, 'worker');
  const queue = createSyncQueue({ connection: redis, prefix, attempts: config.sync.attempts });
  try {
    await queue.waitUntilReady();
    const jobs = benchEvents(idPrefix, n).map((e) => syncJob({ instituteId: config.classroom.instituteId, batchId: e.batchId }));
    const started = performance.now();
    for (let i = 0; i < n; i += PER_POST) await queue.addBulk(jobs.slice(i, i + PER_POST));
    return n / ((performance.now() - started) / 1000);
  } finally {
    await queue.close();
    await redis.quit();
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
        const response = await fetch(`${url}/v1/batches`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body });
        if (response.status !== 202) throw new Error(`POST /v1/batches answered ${response.status}: ${await response.text()}`);
        await response.arrayBuffer();
      }
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

/** Wall time of `classroom-sync enqueue FILE`, start to exit. */
async function runEnqueue(env: Record<string, string>, file: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, 'enqueue', file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`classroom-sync enqueue exited with ${code}: ${output.slice(-1_000)}`);
  return performance.now() - started;
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
  const http = await createHttpServer({ runtime, metrics: createMetrics() });
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
    void written.then(() => http.close()).then(() => runtime.close()).then(() => process.exit(0));
  });
  process.send!(url);
}

function report(r: {
  machine: Machine;
  n: number;
  recorded: number;
  addBulk: [number, number];
  post1: number;
  post4: number;
  cli: number;
  cliNoStartup: number;
  startupMs: number;
}): void {
  const addBulk = (r.addBulk[0] + r.addBulk[1]) / 2;
  const share = (rate: number) => rate / addBulk;
  const row = (figure: string, rate: number, goal = true) => ({
    figure,
    value: `${rate.toFixed(0)} events/s = ${share(rate).toFixed(2)} × addBulk`,
    ...(goal ? { goal: '≥ 0.5 × addBulk', met: share(rate) >= 0.5 } : {}),
  });
  publish({
    bench: 'intake',
    title: 'Intake (`bench/intake.ts`)',
    command: `npm run bench:intake -- --events ${r.n}`,
    machine: machineAtEnd(r.machine),
    figures: {
      events: r.n,
      recorded: r.recorded,
      addBulkPerSecond: round(addBulk),
      addBulkRuns: r.addBulk.map((v) => round(v)),
      postPerSecond: round(r.post1),
      post4InFlightPerSecond: round(r.post4),
      enqueuePerSecond: round(r.cli),
      enqueueWithoutStartupPerSecond: round(r.cliNoStartup),
      enqueueStartupMs: round(r.startupMs),
    },
    rows: [
      { figure: 'BullMQ addBulk (500 per call)', value: `${addBulk.toFixed(0)} jobs/s (runs: ${r.addBulk.map((v) => v.toFixed(0)).join(', ')})` },
      row('POST /v1/batches, 500 per request', r.post1),
      row('POST /v1/batches, 4 requests in flight', r.post4, false),
      row('classroom-sync enqueue, whole process', r.cli),
      row('classroom-sync enqueue, without start-up', r.cliNoStartup, false),
      { figure: 'enqueue start-up and exit (empty file)', value: `${(r.startupMs / 1000).toFixed(2)} s` },
      { figure: 'batches recorded', value: `${r.recorded} of ${3 * r.n}` },
    ],
    notes: [
      `${r.n} new events per path. Each accepted event is a PostgreSQL row plus its first audit row (one transaction per chunk), a state read-back, and a BullMQ job (addBulk); no worker consumes the jobs.`,
      'POST: a child process running the worker\'s HTTP server only (no sync worker), the benchmark as client, one request in flight (and four, for comparison). enqueue: `node bin/classroom-sync.js enqueue FILE` timed from spawn to exit; "without start-up" subtracts the time of the same command on an empty file (loading tsx and the sources, connecting, closing).',
      'addBulk: `Queue.addBulk` of the same job shape (id, data, options), 500 per call, one call at a time, on its own queue prefix, once before and once after the other paths; the ratio uses their mean.',
    ],
  });
}

if (process.argv.includes('--server-child')) await serverChild();
else await main();
