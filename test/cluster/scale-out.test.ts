// Scale-out, proven on a real Redis Cluster: 3 masters with a replica each, started by this test
// from the machine's redis-server. Four `classroom-sync worker` processes sync 150 batches through
// it against a sandbox with a strict rate limit, and the master that serves the queue's slot is
// SIGKILLed a third of the way in. Afterwards every batch has exactly one class, the remote never
// answered 429, and a replica took over the slot. Prints a report; writes
// test-results/cluster-report.json.
//
// 150 (CLUSTER_TEST_N; it was 300): the fleet is at its rate limit from the first second, and at the
// kill 100 batches are still to go, every slot busy; the failover's errors (CLUSTERDOWN, MOVED, closed
// connections, lost job locks), the 503s of /readyz and the rate held on the promoted master are
// those of a run of 300, in half the time.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { count, eq } from 'drizzle-orm';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { runMigrations } from '../../src/db/migrate.ts';
import { batchClasses } from '../../src/db/schema/index.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { type Runtime, createRuntime } from '../../src/runtime/runtime.ts';
import { sandboxOptionsFromConfig, startSandbox } from '../../src/sandbox/index.ts';
import { SYNC_QUEUE } from '../../src/sync/queue.ts';
import { WorkerProcess, type WorkerLine } from '../faults/processes.ts';
import { Standbys } from '../faults/standbys.ts';
import { PG_SERVER, dropDatabase, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { RedisClusterProcesses } from './redis-cluster.ts';

const N = Number(process.env.CLUSTER_TEST_N ?? 150);
const WORKERS = 4;
/** The remote admits 40 calls per sliding second; the fleet is given 30 (1,800 a minute). */
const REMOTE_CALLS_PER_SECOND = 40;
const FLEET_RATE_LIMIT_PER_MINUTE = 1_800;
const NODE_TIMEOUT_MS = 2_000;

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  // Children first, then what they were connected to; every step runs even if one fails.
  while (cleanup.length) await cleanup.pop()!().catch((error: unknown) => console.error('cleanup failed:', error));
});

it(`${WORKERS} worker processes sync ${N} batches through a 3-master Redis Cluster, under one rate limit, while the master serving the queue fails over`, async () => {
  const started = Date.now();
  const id = randomBytes(4).toString('hex');
  const databaseName = `classroom_sync_cluster_${id}`;
  // REDIS_URL once the cluster is up, CLASSROOM_BASE_URL once the sandbox is.
  const env: Record<string, string> = {
    DATABASE_URL: `${PG_SERVER}/${databaseName}`,
    QUEUE_PREFIX: `{cs-cluster-${id}}`,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    PORT: '0',
    HOST: '127.0.0.1',
    API_TOKEN: randomBytes(16).toString('hex'),
    SYNC_CONCURRENCY: '4',
    // A Redis outage makes calls "not sent" and burns attempts; give the failover room.
    SYNC_ATTEMPTS: '60',
    SYNC_BACKOFF_BASE: '100ms',
    SYNC_BACKOFF_MAX: '1s',
    CLASSROOM_TIMEOUT: '2s',
    SYNC_LEASE: '6s',
    SYNC_JOB_LOCK: '5s',
    SYNC_SETTLE: '300ms',
    SYNC_READ_LAG: '1s',
    SYNC_SWEEP_EVERY: '2s',
    SYNC_STUCK_AFTER: '10s',
    SHUTDOWN_GRACE: '5s',
    CLASSROOM_RATE_LIMIT_PER_MINUTE: String(FLEET_RATE_LIMIT_PER_MINUTE),
    CLASSROOM_THROTTLE_PAUSE: '1s',
    RECONCILE_EVERY: '1h',
  };
  // The workers load their modules (standbys.ts), the sandbox starts and the database is made while
  // the cluster forms; the workers, taken once it has, run with the environment as it is then.
  const standbys = new Standbys(env, { ready: WORKERS, total: WORKERS });
  cleanup.push(() => standbys.close());
  const cluster = new RedisClusterProcesses({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: NODE_TIMEOUT_MS });
  cleanup.push(() => cluster.stop());
  cleanup.push(() => dropDatabase(databaseName));
  const sandboxStarting = startSandbox({
    ...sandboxOptionsFromConfig(loadConfig(env)),
    faults: { rateLimitPerMinute: REMOTE_CALLS_PER_SECOND, rateLimitWindowMs: 1_000 },
  });
  cleanup.push(async () => (await sandboxStarting.catch(() => undefined))?.close());
  const [clusterReadyMs, sandbox] = await Promise.all([cluster.start().then(() => Date.now() - started), sandboxStarting, runMigrations(env.DATABASE_URL!)]);
  env.REDIS_URL = cluster.url;
  env.CLASSROOM_BASE_URL = sandbox.url;
  const config = loadConfig(env);
  // The test's own runtime publishes through the cluster like an integrator would.
  const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
  cleanup.push(() => runtime.close());

  // Every key of the queue hashes to the prefix's tag: this is the slot whose master we kill.
  const slot = await cluster.keySlot(`${config.queuePrefix}:${SYNC_QUEUE}:wait`);
  expect(await cluster.keySlot(`${config.queuePrefix}:ratelimit:x`)).toBe(slot);
  const slotMaster = await cluster.masterOf(slot);
  expect(slotMaster).toBeDefined();

  const callTimes: number[] = [];
  const stopRecording = sandbox.onRequest(() => callTimes.push(Date.now()));
  cleanup.push(async () => stopRecording());

  const lines: WorkerLine[] = [];
  const linesOf: WorkerLine[][] = Array.from({ length: WORKERS }, () => []);
  const workers = Array.from(
    { length: WORKERS },
    (_, i) =>
      new WorkerProcess(
        env,
        (line) => {
          lines.push(line);
          linesOf[i]!.push(line);
        },
        standbys,
      ),
  );
  cleanup.push(async () => {
    for (const w of workers) w.kill9();
  });
  const urls = await waitFor(
    () => {
      const found = lines.filter((l) => l.msg === 'worker started').map((l) => String(l.url));
      return found.length === WORKERS && found;
    },
    `${WORKERS} workers to start`,
    60_000,
  );
  expect(await readyz(urls[0]!)).toMatchObject({ status: 200, body: { checks: { redis: 'ok' } } });

  const publishStarted = Date.now();
  const events = Array.from({ length: N }, (_, i) => ({ batchId: `cluster-${i}`, name: `Cluster batch ${i}`, subject: 'Chemistry' }));
  const outcomes = await publishBatches(publishDepsOf(runtime), events);
  expect(outcomes.every((o) => o.ok && o.queued)).toBe(true);
  expect(await cluster.keysInSlot(slot, slotMaster!)).toBeGreaterThan(0);

  // A third of the way in, the master serving the queue (and the rate limiter) dies.
  await waitFor(async () => (await syncedCount(runtime)) >= Math.floor(N / 3), `${Math.floor(N / 3)} batches synced before the kill`, 120_000);
  const syncedAtKill = await syncedCount(runtime);
  const killedAt = Date.now();
  await cluster.kill(slotMaster!);
  const readiness: string[] = [];
  const polling = pollReadiness(urls[0]!, readiness);
  const newMaster = await cluster.waitForFailover(slot, slotMaster!, 30_000);
  const failoverMs = Date.now() - killedAt;
  expect(newMaster).not.toBe(slotMaster);

  await waitFor(async () => (await syncedCount(runtime)) === N, `all ${N} batches synced after the failover`, 150_000);
  const wallMs = Date.now() - publishStarted;
  polling.stop();
  await polling.done;
  // Readiness comes back on the promoted master.
  await waitFor(async () => (await readyz(urls[0]!)).status === 200, '/readyz to answer 200 after the failover', 30_000);

  // Queue gauges are read from the cluster at scrape time, without an error.
  const metrics = await (await fetch(`${urls[1]}/metrics`)).text();
  expect(metrics).toMatch(/^classroom_sync_queue_jobs\{queue="batch-sync",state="completed"\} [1-9]\d*$/m);
  expect(metrics).toMatch(/^classroom_sync_scrape_errors_total\{source="redis"\} 0$/m);

  // SIGTERM drains and exits 0 on the cluster too (stop() SIGKILLs after 15 s: exit code null).
  const stopStarted = Date.now();
  const codes = await Promise.all(workers.map((w) => w.stop()));
  const stopMs = Date.now() - stopStarted;

  const truth = sandbox.state();
  const ours = Object.entries(truth.byName).filter(([name]) => name.startsWith('Cluster batch '));
  const rateLimited = Object.values(truth.calls.byOperation).reduce((sum, op) => sum + (op.outcomes.rateLimited ?? 0), 0);
  const report = {
    batches: N,
    workerProcesses: WORKERS,
    concurrencyPerProcess: config.sync.concurrency,
    cluster: '3 masters + 3 replicas',
    clusterNodeTimeoutMs: NODE_TIMEOUT_MS,
    clusterStartMs: clusterReadyMs,
    remoteLimitPerSecond: REMOTE_CALLS_PER_SECOND,
    fleetLimitPerMinute: FLEET_RATE_LIMIT_PER_MINUTE,
    remoteCalls: truth.calls.totalCalls,
    remoteCallsPerSecond: Number((truth.calls.totalCalls / (wallMs / 1000)).toFixed(1)),
    rateLimited429: rateLimited,
    remoteClasses: ours.reduce((sum, [, n]) => sum + n, 0),
    duplicates: ours.reduce((sum, [, n]) => sum + Math.max(0, n - 1), 0),
    syncedAtKill,
    killedMasterPort: slotMaster,
    promotedReplicaPort: newMaster,
    failoverMs,
    longestRemoteSilenceMs: longestGap(callTimes, killedAt - 1_000),
    readyzAfterKill: tally(readiness),
    workerWarningsAndErrors: tally(lines.filter((l) => typeof l.level === 'number' && l.level >= 40).map(warningKind)),
    wallMs,
    stopExitCodes: codes,
    stopMs,
  };
  printReport(report);
  codes.forEach((code, i) => {
    if (code !== 0)
      console.log(
        `worker ${i} exited ${code}; its last lines:\n${linesOf[i]!.slice(-8)
          .map((l) => `  ${JSON.stringify(l).slice(0, 2500)}`)
          .join('\n')}`,
      );
  });
  expect(codes).toEqual(Array(WORKERS).fill(0));

  expect(ours).toHaveLength(N);
  expect(ours.every(([, n]) => n === 1)).toBe(true);
  expect(truth.calls.byOperation.addClass?.calls).toBe(N);
  expect(rateLimited).toBe(0);
  const rows = await runtime.database.db.select().from(batchClasses);
  expect(rows.filter((r) => r.state === 'synced' && r.classId && r.joinLink)).toHaveLength(N);
}, 300_000);

async function syncedCount(runtime: Runtime): Promise<number> {
  const [row] = await runtime.database.db.select({ n: count() }).from(batchClasses).where(eq(batchClasses.state, 'synced'));
  return Number(row?.n ?? 0);
}

async function readyz(url: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) });
  return { status: response.status, body: await response.json() };
}

/** Records /readyz every 200 ms until stopped (what a load balancer would see during the failover). */
function pollReadiness(url: string, into: string[]) {
  let running = true;
  const done = (async () => {
    while (running) {
      const sample = await readyz(url).then(
        (r) => `${r.status} redis: ${(r.body as { checks?: { redis?: string } }).checks?.redis ?? '?'}`,
        (error: unknown) => `no answer (${String(error)})`,
      );
      into.push(sample);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return { done, stop: () => (running = false) };
}

function tally(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/** A log line's message and error, with job ids and ports taken out so that like counts with like. */
function warningKind(line: WorkerLine): string {
  const err = (line.err as { message?: string } | undefined)?.message ?? '';
  const text = `${line.msg}: ${err.split(':')[0]} ${/Last error: (\w+: \w+)/.exec(err)?.[1] ?? ''}`;
  return text
    .replace(/batch-\S+/g, '<job>')
    .replace(/\d+\.\d+\.\d+\.\d+:\d+/g, '<node>')
    .trim();
}

/** The longest stretch without a single remote call after `from` (how long the fleet stood still). */
function longestGap(times: number[], from: number): number {
  const after = times.filter((t) => t >= from).sort((a, b) => a - b);
  let gap = 0;
  for (let i = 1; i < after.length; i++) gap = Math.max(gap, after[i]! - after[i - 1]!);
  return gap;
}

function printReport(report: Record<string, unknown>): void {
  mkdirSync('test-results', { recursive: true });
  writeFileSync('test-results/cluster-report.json', `${JSON.stringify(report, null, 2)}\n`);
  const width = Math.max(...Object.keys(report).map((k) => k.length));
  console.log(
    [
      'redis cluster scale-out report',
      ...Object.entries(report).map(([k, v]) => `  ${k.padEnd(width)}  ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`),
    ].join('\n'),
  );
}
