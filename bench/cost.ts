// Cost per batch: the worker's CPU time per synced batch, beside the floor of the same work done
// with three bare `fetch` calls, the worker's peak RSS, and the CPU per batch with tracing on.
//
//   npm run bench:cost                       # 2,000 measured batches after 300 to warm up
//   npm run bench:cost -- --batches 5000
//   npm run bench:cost -- --profile FILE     # also the worker's CPU profile, over as many batches again
//                                            # (summary: npx tsx bench/support/profile-top.ts FILE)
//
// Processes besides this one: the sandbox (`classroom-sync sandbox`, no latency, no limit); the
// worker (support/cost-worker.ts: `startWorker`, exactly what `classroom-sync worker` runs, with
// default settings and info logs to /dev/null), which reports its own `process.cpuUsage()` and max
// RSS when asked, run three times: tracing off, on (OTLP/HTTP protobuf to a stand-in collector in
// this process, support/collector.ts), off again; and the floor (this file with --floor-child):
// the same three requests per batch (add-class, edit-class, get-class, with the real headers)
// through bare `fetch`, with as many in flight as the worker's SYNC_CONCURRENCY, measured the same way.
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { loadConfig } from '../src/config/config.ts';
import { publishBatches } from '../src/intake/publish.ts';
import { createLogger } from '../src/logging/logger.ts';
import { createRuntime, publishDepsOf } from '../src/runtime/runtime.ts';
import { startSandboxProcess } from './support/processes.ts';
import { type Profile, summarize } from './support/profile-top.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, round } from './support/report.ts';
import { argValue, benchEvents, createScratch, numberSetting, scratchPool, sleep } from './support/scratch.ts';
import { startCollector } from './support/collector.ts';
import { type Usage, usage } from './support/usage.ts';

const WARM_UP = 300;

interface Floor {
  cpuMsPerBatch: number;
  maxRssMb: number;
}

interface Measured {
  cpuMsPerBatch: number;
  statementsPerBatch: number;
  maxRssMb: number;
  perSecond: number;
}
const FLOOR = fileURLToPath(import.meta.url);
const WORKER = fileURLToPath(new URL('./support/cost-worker.ts', import.meta.url));

async function main(): Promise<void> {
  const batches = numberSetting('--batches', 'BENCH_BATCHES', 2_000);
  const profileFile = argValue('--profile');
  const machine = machineAtStart();
  const scratch = await createScratch('cost');
  const sandbox = await startSandboxProcess([], scratch.env);
  const collector = await startCollector();
  const pool = scratchPool(scratch);
  const env = { ...scratch.env, CLASSROOM_BASE_URL: sandbox.url, LOG_LEVEL: 'info', CLASSROOM_RATE_LIMIT_PER_MINUTE: '1000000' };
  const config = loadConfig(env);
  const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
  const deps = publishDepsOf(runtime);
  const sync = async (prefix: string, n: number) => {
    const events = benchEvents(prefix, n);
    for (let i = 0; i < n; i += 1_000) await publishBatches(deps, events.slice(i, i + 1_000));
    await untilTerminal(pool, `${prefix}-%`, n);
  };
  // The floor is measured before and after the worker (load drifts on a shared machine); mean used.
  const measureFloor = async () => {
    const child = startChild(FLOOR, ['--floor-child', sandbox.url, String(batches), String(config.sync.concurrency)], env);
    const floor = await child.next<Floor>();
    await child.stop();
    return floor;
  };
  // Tracing off, on (exporting to the stand-in collector over OTLP/HTTP protobuf), off again.
  const tracingEnv = { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'classroom-sync-bench' };
  try {
    const floorBefore = await measureFloor();
    const off1 = await measureWorker({ name: 'off1', env, batches, sync, profileFile });
    const on = await measureWorker({ name: 'on', env: tracingEnv, tracing: true, batches, sync });
    const off2 = await measureWorker({ name: 'off2', env, batches, sync });
    const synced = await countSynced(pool, '%-cost-%');
    const floorAfter = await measureFloor();
    const floor = {
      cpuMsPerBatch: (floorBefore.cpuMsPerBatch + floorAfter.cpuMsPerBatch) / 2,
      maxRssMb: Math.max(floorBefore.maxRssMb, floorAfter.maxRssMb),
      runs: [floorBefore.cpuMsPerBatch, floorAfter.cpuMsPerBatch],
    };
    const measured = { ...off1, cpuMsPerBatch: (off1.cpuMsPerBatch + off2.cpuMsPerBatch) / 2, maxRssMb: Math.max(off1.maxRssMb, off2.maxRssMb) };
    const tracing = { on, offRuns: [off1.cpuMsPerBatch, off2.cpuMsPerBatch], exported: collector.received() };
    report({ machine, batches, synced, concurrency: config.sync.concurrency, measured, floor, tracing, profileFile });
  } finally {
    await runtime.close();
    await collector.close();
    await pool.end();
    await sandbox.stop();
    await scratch.drop();
  }
}

interface Arm {
  name: string;
  env: Record<string, string>;
  tracing?: boolean;
  batches: number;
  sync(prefix: string, n: number): Promise<void>;
  profileFile?: string | undefined;
}

/** One worker process: warmed up, then its CPU across `batches` batches, each arm on batches of its own. */
async function measureWorker(arm: Arm): Promise<Measured> {
  const args = [...(arm.tracing ? ['--tracing'] : []), ...(arm.profileFile ? ['--profile', resolve(arm.profileFile)] : [])];
  const worker = startChild(WORKER, args, arm.env);
  try {
    await worker.next();
    await arm.sync(`${arm.name}-warm`, WARM_UP);
    const before = await worker.ask<Usage>('usage');
    const started = performance.now();
    await arm.sync(`${arm.name}-cost`, arm.batches);
    const seconds = (performance.now() - started) / 1000;
    const after = await worker.ask<Usage>('usage');
    if (arm.profileFile) {
      // Profiled over batches of their own: sampling costs CPU, so it stays out of the figures.
      await worker.ask('profile-start');
      await arm.sync(`${arm.name}-profiled`, arm.batches);
      await worker.ask('profile-stop');
    }
    return {
      cpuMsPerBatch: (after.cpuMs - before.cpuMs) / arm.batches,
      statementsPerBatch: ((after.statements ?? 0) - (before.statements ?? 0)) / arm.batches,
      maxRssMb: after.maxRssMb,
      perSecond: arm.batches / seconds,
    };
  } finally {
    await worker.stop();
  }
}

async function untilTerminal(pool: pg.Pool, like: string, n: number): Promise<void> {
  const deadline = performance.now() + 5 * 60_000;
  for (;;) {
    const { rows } = await pool.query<{ n: string }>(
      `select count(*) as n from batch_classes where state in ('synced', 'failed', 'needs_review') and batch_id like $1`,
      [like],
    );
    if (Number(rows[0]!.n) >= n) return;
    if (performance.now() > deadline) throw new Error(`batches ${like} not finished after 5 minutes`);
    await sleep(100);
  }
}

async function countSynced(pool: pg.Pool, like: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`select count(*) as n from batch_classes where state = 'synced' and batch_id like $1`, [like]);
  return Number(rows[0]!.n);
}

/** A child process (this file's floor, or the worker) speaking a tiny request/answer protocol over IPC. */
function startChild(file: string, args: string[], env: Record<string, string>) {
  const execArgv = ['--import', 'tsx'];
  // stdout to /dev/null: the worker's info logs cost what they cost in production, and no more.
  const child = fork(file, args, { execArgv, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`child ${args[0]} exited with ${code}`));
      child.once('exit', onExit);
      child.once('message', (m) => {
        child.off('exit', onExit);
        resolve(m as T);
      });
    });
  return {
    next,
    ask<T>(what: string): Promise<T> {
      const answer = next<T>();
      child.send(what);
      return answer;
    },
    async stop() {
      if (child.exitCode === null && child.connected) child.send('stop');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The floor: per batch, the three requests the worker sends, through bare fetch. */
async function floorChild(): Promise<void> {
  const [url, n, inFlight] = [process.argv.at(-3)!, Number(process.argv.at(-2)), Number(process.argv.at(-1))];
  const c = loadConfig(process.env).classroom;
  const headers = {
    authorization: `Basic ${Buffer.from(`${c.userId}:${c.apiKey}`).toString('base64')}`,
    'x-api-key': c.xApiKey,
    'user-agent': c.userAgent,
    [c.namespaceHeader]: c.namespace,
    accept: 'application/json',
    'content-type': 'application/json',
  };
  const one = async (i: number) => {
    const added = await fetch(`${url}${c.addClassPath}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: `Floor ${i}`, subject: 'Bench', instituteId: c.instituteId }),
    });
    const classId = ((await added.json()) as { data: { _id: string } }).data._id;
    const edited = await fetch(`${url}/teacher/editClass`, {
      method: c.editClassMethod,
      headers,
      body: JSON.stringify({ classId, enableJoinMagicLink: true }),
    });
    await edited.json();
    const read = await fetch(`${url}/user/v2/classes/${classId}?full=true`, { headers });
    await read.json();
  };
  const run = async (count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < count) await one(next++);
      }),
    );
  };
  await run(WARM_UP);
  const before = usage();
  await run(n);
  const after = usage();
  process.send!({ cpuMsPerBatch: (after.cpuMs - before.cpuMs) / n, maxRssMb: after.maxRssMb });
  process.on('message', (m) => {
    if (m === 'stop') process.exit(0);
  });
}

function report(r: {
  machine: Machine;
  batches: number;
  synced: number;
  concurrency: number;
  measured: Measured;
  floor: Floor & { runs: number[] };
  tracing: { on: Measured; offRuns: number[]; exported: { requests: number; bytes: number } };
  profileFile: string | undefined;
}): void {
  const ratio = r.measured.cpuMsPerBatch / r.floor.cpuMsPerBatch;
  const tracingRatio = r.tracing.on.cpuMsPerBatch / r.measured.cpuMsPerBatch;
  // One section per Node.js major: tracing's share differs between them (AsyncLocalStorage).
  const major = process.versions.node.split('.')[0];
  publish({
    bench: `cost-node${major}`,
    title: `Cost per batch on Node ${major} (\`bench/cost.ts\`)`,
    command: `npm run bench:cost -- --batches ${r.batches}${r.profileFile ? ' --profile FILE' : ''}`,
    machine: machineAtEnd(r.machine),
    figures: {
      batches: r.batches,
      synced: r.synced,
      concurrency: r.concurrency,
      workerCpuMsPerBatch: round(r.measured.cpuMsPerBatch, 2),
      postgresStatementsPerBatch: round(r.measured.statementsPerBatch, 2),
      floorCpuMsPerBatch: round(r.floor.cpuMsPerBatch, 2),
      floorRuns: r.floor.runs.map((v) => round(v, 2)),
      ratioToFloor: round(ratio, 2),
      workerPeakRssMb: r.measured.maxRssMb,
      floorPeakRssMb: r.floor.maxRssMb,
      batchesPerSecond: round(r.measured.perSecond, 1),
      tracingOffCpuMsPerBatch: r.tracing.offRuns.map((v) => round(v, 2)),
      tracingOnCpuMsPerBatch: round(r.tracing.on.cpuMsPerBatch, 2),
      tracingOnToOff: round(tracingRatio, 3),
      tracingOnPeakRssMb: r.tracing.on.maxRssMb,
      tracingExportRequests: r.tracing.exported.requests,
      tracingExportBytes: r.tracing.exported.bytes,
      ...(r.profileFile ? { profile: r.profileFile } : {}),
    },
    rows: [
      {
        figure: 'worker CPU per synced batch',
        value: `${r.measured.cpuMsPerBatch.toFixed(2)} ms = ${ratio.toFixed(1)} × floor`,
        goal: '≤ 3 × floor',
        met: ratio <= 3,
      },
      {
        figure: 'floor: CPU of 3 bare fetch calls',
        value: `${r.floor.cpuMsPerBatch.toFixed(2)} ms (before / after the worker: ${r.floor.runs.map((v) => v.toFixed(2)).join(' / ')})`,
      },
      {
        figure: 'PostgreSQL statements per batch',
        value: `${r.measured.statementsPerBatch.toFixed(2)} (BEGIN and COMMIT included)`,
        goal: '≤ 8',
        met: r.measured.statementsPerBatch <= 8,
      },
      { figure: 'worker peak RSS', value: `${r.measured.maxRssMb} MB (the fetch floor process: ${r.floor.maxRssMb} MB)` },
      { figure: 'worker throughput while measured', value: `${r.measured.perSecond.toFixed(1)} batches/s (${r.synced}/${3 * r.batches} synced)` },
      {
        figure: 'worker CPU per batch, tracing on ÷ off',
        value: `${tracingRatio.toFixed(3)} (${r.tracing.on.cpuMsPerBatch.toFixed(2)} ms on; off before / after: ${r.tracing.offRuns.map((v) => v.toFixed(2)).join(' / ')} ms)`,
        goal: '≤ 1.3',
        met: tracingRatio <= 1.3,
      },
      {
        figure: 'tracing on: peak RSS, exported',
        value: `${r.tracing.on.maxRssMb} MB; ${r.tracing.exported.requests} OTLP requests, ${(r.tracing.exported.bytes / 1e6).toFixed(1)} MB`,
      },
    ],
    notes: [
      `Worker: \`startWorker\` (what \`classroom-sync worker\` runs: sync, HTTP API, metrics) in its own process, SYNC_CONCURRENCY ${r.concurrency}, LOG_LEVEL info to /dev/null, limiter set far above the load; CPU is \`process.cpuUsage()\` (user + system) across ${r.batches} batches published at once, after ${WARM_UP} to warm up. Sandbox: its own process, no latency.`,
      `Floor: another process sends the same three requests per batch (same headers and bodies) with bare \`fetch\`, ${r.concurrency} at a time, measured the same way after ${WARM_UP} to warm up, once before and once after the worker (the mean is the floor).`,
      `Tracing: the same worker with OTEL_EXPORTER_OTLP_ENDPOINT set (and nothing else: protocol http/protobuf, sampler parentbased_always_on, the batch span processor's defaults), started as \`classroom-sync worker\` starts it, exporting to a stand-in collector that answers 200 and keeps nothing. The batches are published without a trace (the bench's own process has none), so each job's spans start a trace in the worker. Off is the mean of a run before and a run after.`,
      'What bounds the ratio: docs/performance.md, "What bounds the figures that miss". Profile it with `npm run bench:cost -- --profile FILE` (then `npx tsx bench/support/profile-top.ts FILE`).',
      ...(r.profileFile ? [profileNote(r.profileFile, r.batches)] : []),
    ],
  });
}

/** The profile's top items, charged to the package (or file of ours) that caused them, per batch. */
function profileNote(file: string, batches: number): string {
  const { totalMs, byResponsible } = summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, 12);
  const busy = byResponsible.filter(([owner]) => owner !== '(idle)');
  const items = busy.slice(0, 10).map(([owner, ms]) => `${owner} ${((100 * ms) / totalMs).toFixed(0)} % (${(ms / batches).toFixed(2)} ms)`);
  return `Profiled over another ${batches} batches after the measured ones (sampling costs CPU, so the figures above are from an unprofiled stretch). Self time per batch, charged to the nearest package or file of ours up the stack, socket writes apart (the profile samples by wall clock, so theirs includes time the worker was not running): ${items.join(', ')}.`;
}

if (process.argv.includes('--floor-child')) await floorChild();
else await main();
