// Cost per batch: the worker's CPU time per synced batch, beside the floor of the same work done
// with three bare `fetch` calls, and the worker's peak RSS.
//
//   npm run bench:cost                       # 2,000 measured batches after 300 to warm up
//   npm run bench:cost -- --batches 5000
//   npm run bench:cost -- --profile FILE     # also the worker's CPU profile, over as many batches again
//                                            # (summary: npx tsx bench/support/profile-top.ts FILE)
//
// Three processes besides this one: the sandbox (`classroom-sync sandbox`, no latency, no limit);
// the worker (this file with --worker-child: `startWorker`, exactly what `classroom-sync worker`
// runs, with default settings and info logs to /dev/null), which reports its own
// `process.cpuUsage()` and max RSS when asked; and the floor (this file with --floor-child): the
// same three requests per batch (add-class, edit-class, get-class, with the real headers) through
// bare `fetch`, with as many in flight as the worker's SYNC_CONCURRENCY, measured the same way.
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { countStatements } from './support/statements.ts';
import { loadConfig } from '../src/config.ts';
import { publishBatches } from '../src/intake/publish.ts';
import { createLogger } from '../src/logger.ts';
import { createRuntime, publishDepsOf } from '../src/runtime.ts';
import { startSandboxProcess } from './support/processes.ts';
import { type Profile, summarize } from './support/profile-top.ts';
import { type Machine, machineAtEnd, machineAtStart, publish, round } from './support/report.ts';
import { argValue, benchEvents, createScratch, numberSetting, scratchPool, sleep } from './support/scratch.ts';

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
const SELF = fileURLToPath(import.meta.url);

interface Usage {
  cpuMs: number;
  maxRssMb: number;
  /** PostgreSQL statements the worker sent so far (BEGIN and COMMIT included). */
  statements?: number;
}

async function main(): Promise<void> {
  const batches = numberSetting('--batches', 'BENCH_BATCHES', 2_000);
  const profileFile = argValue('--profile');
  const machine = machineAtStart();
  const scratch = await createScratch('cost');
  const sandbox = await startSandboxProcess([], scratch.env);
  const pool = scratchPool(scratch);
  const env = { ...scratch.env, CLASSROOM_BASE_URL: sandbox.url, LOG_LEVEL: 'info', CLASSROOM_RATE_LIMIT_PER_MINUTE: '1000000' };
  const config = loadConfig(env);
  // The floor is measured before and after the worker (load drifts on a shared machine); mean used.
  const measureFloor = async () => {
    const child = startChild(['--floor-child', sandbox.url, String(batches), String(config.sync.concurrency)], env);
    const floor = await child.next<Floor>();
    await child.stop();
    return floor;
  };
  try {
    const floorBefore = await measureFloor();
    const worker = startChild(['--worker-child', ...(profileFile ? ['--profile', resolve(profileFile)] : [])], env);
    let measured: Measured;
    try {
      await worker.next();
      const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
      const deps = publishDepsOf(runtime);
      try {
        const sync = async (prefix: string, n: number) => {
          const events = benchEvents(prefix, n);
          for (let i = 0; i < n; i += 1_000) await publishBatches(deps, events.slice(i, i + 1_000));
          await untilTerminal(pool, `${prefix}-%`, n);
        };
        await sync('warm', WARM_UP);
        const before = await worker.ask<Usage>('usage');
        const started = performance.now();
        await sync('cost', batches);
        const seconds = (performance.now() - started) / 1000;
        const after = await worker.ask<Usage>('usage');
        if (profileFile) {
          // Profiled over batches of their own: sampling costs CPU, so it stays out of the figures.
          await worker.ask('profile-start');
          await sync('profiled', batches);
          await worker.ask('profile-stop');
        }
        measured = {
          cpuMsPerBatch: (after.cpuMs - before.cpuMs) / batches,
          statementsPerBatch: ((after.statements ?? 0) - (before.statements ?? 0)) / batches,
          maxRssMb: after.maxRssMb,
          perSecond: batches / seconds,
        };
      } finally {
        await runtime.close();
      }
    } finally {
      await worker.stop();
    }
    const synced = await countSynced(pool, 'cost-%');
    const floorAfter = await measureFloor();
    const floor = {
      cpuMsPerBatch: (floorBefore.cpuMsPerBatch + floorAfter.cpuMsPerBatch) / 2,
      maxRssMb: Math.max(floorBefore.maxRssMb, floorAfter.maxRssMb),
      runs: [floorBefore.cpuMsPerBatch, floorAfter.cpuMsPerBatch],
    };
    report({ machine, batches, synced, concurrency: config.sync.concurrency, measured, floor, profileFile });
  } finally {
    await pool.end();
    await sandbox.stop();
    await scratch.drop();
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

/** A child process of this file speaking a tiny request/answer protocol over IPC. */
function startChild(args: string[], env: Record<string, string>) {
  const execArgv = ['--import', 'tsx'];
  // stdout to /dev/null: the worker's info logs cost what they cost in production, and no more.
  const child = fork(SELF, args, { execArgv, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
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

function usage(): Usage {
  const cpu = process.cpuUsage();
  return { cpuMs: (cpu.user + cpu.system) / 1000, maxRssMb: round(process.resourceUsage().maxRSS / 1024) };
}

/** `classroom-sync worker` in a process of its own that answers 'usage' and 'stop'. */
async function workerChild(): Promise<void> {
  const statements = countStatements();
  const profile = argValue('--profile');
  const { startWorker } = await import('../src/commands/worker.ts');
  const worker = await startWorker(loadConfig(process.env));
  // The profile covers batches synced after the measured ones (`profile-start` to `profile-stop`).
  const session = profile ? new Session() : undefined;
  session?.connect();
  process.on('message', (m) => {
    if (m === 'usage') process.send!({ ...usage(), statements: statements() });
    if (m === 'profile-start' && session) {
      void session
        .post('Profiler.enable')
        .then(() => session.post('Profiler.start'))
        .then(() => process.send!('profiling'));
    }
    if (m === 'profile-stop' && session) {
      void session
        .post('Profiler.stop')
        .then(({ profile: p }) => writeFileSync(profile!, JSON.stringify(p)))
        .then(() => process.send!('profiled'));
    }
    if (m === 'stop') void worker.stop().then(() => process.exit(0));
  });
  process.send!('ready');
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
  profileFile: string | undefined;
}): void {
  const ratio = r.measured.cpuMsPerBatch / r.floor.cpuMsPerBatch;
  publish({
    bench: 'cost',
    title: 'Cost per batch (`bench/cost.ts`)',
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
      { figure: 'worker throughput while measured', value: `${r.measured.perSecond.toFixed(1)} batches/s (${r.synced}/${r.batches} synced)` },
    ],
    notes: [
      `Worker: \`startWorker\` (what \`classroom-sync worker\` runs: sync, HTTP API, metrics) in its own process, SYNC_CONCURRENCY ${r.concurrency}, LOG_LEVEL info to /dev/null, limiter set far above the load; CPU is \`process.cpuUsage()\` (user + system) across ${r.batches} batches published at once, after ${WARM_UP} to warm up. Sandbox: its own process, no latency.`,
      `Floor: another process sends the same three requests per batch (same headers and bodies) with bare \`fetch\`, ${r.concurrency} at a time, measured the same way after ${WARM_UP} to warm up, once before and once after the worker (the mean is the floor).`,
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

if (process.argv.includes('--worker-child')) await workerChild();
else if (process.argv.includes('--floor-child')) await floorChild();
else await main();
