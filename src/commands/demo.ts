// `npm start` / `classroom-sync demo`: the whole product against the built-in sandbox in one
// command: checks, migrations, sandbox, worker, sample batches, a live progress bar, and the
// resulting mappings. It never talks to the real service and never touches real batches: it keeps
// to a database and queue prefix of its own (see demoSettings), emptied at the start of each run.
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { type Config, withClassroom } from '../config/config.ts';
import { redactUrl, runMigrations } from '../db/migrate.ts';
import { type MappingRow as BatchRow, TERMINAL_STATES } from '../mapping/index.ts';
import { listBatches } from '../read-model/index.ts';
import { publishBatches } from '../intake/publish.ts';
import { createLogger } from '../logging/logger.ts';
import { type Runtime, publishDepsOf } from '../runtime/runtime.ts';
import { mixedFaultRates, sandboxOptionsFromConfig, startSandbox } from '../sandbox/index.ts';
import { DASHBOARD_PATH } from '../http/dashboard.ts';
import { type WorkerProcess, startWorker } from './worker.ts';
import { checkPostgres, checkRedis, formatFinding } from './preflight.ts';
import { createProgress } from './progress.ts';
import { formatMappingTable, summarize } from './demo-report.ts';
import { DemoBusyError, resetDemoData } from './demo-data.ts';

export interface DemoOptions {
  count: number;
  once: boolean;
  sandboxPort: number;
  /** Probability of an injected fault per remote call (0 = none), to watch retries at work. */
  failRate?: number;
  /** Port of the HTTP server (API, dashboard, metrics); default PORT. 0 = any free port. */
  port?: number;
  /** Log at LOG_LEVEL instead of errors only. */
  verbose?: boolean;
}

export interface DemoIo {
  out(line: string): void;
  /** Where the progress bar (or plain progress lines) go. */
  stream: NodeJS.WriteStream;
}

/** The demo always has an API token: API_TOKEN, or one made for the session (see demoSettings). */
type DemoConfig = Config & { readonly http: { readonly apiToken: string } };

const defaultIo: DemoIo = { out: (line) => process.stdout.write(`${line}\n`), stream: process.stdout };
const SUBJECTS = ['Mathematics', 'Physics', 'Chemistry', 'Biology', 'History', 'Literature'];

/** Returns the exit code: 0 when every sample batch synced. */
export async function runDemo(baseConfig: Config, options: DemoOptions, io: DemoIo = defaultIo): Promise<number> {
  const config = demoSettings(baseConfig, options);
  if (!(await preflight(config, io))) return 1;
  await runMigrations(config.databaseUrl);
  try {
    await resetDemoData(config);
  } catch (error) {
    if (!(error instanceof DemoBusyError)) throw error;
    io.out(error.message);
    return 1;
  }
  const stop = stopOnSignal();
  const sandbox = await startSandbox(
    { ...sandboxOptionsFromConfig(config), faults: options.failRate ? { rates: mixedFaultRates(options.failRate), hangMs: 1_000 } : {} },
    { port: options.sandboxPort },
  );
  let worker: WorkerProcess | undefined;
  try {
    // Exactly what `classroom-sync worker` runs (sync jobs, HTTP API, dashboard, metrics), aimed at the sandbox.
    worker = await startWorker(withBaseUrl(config, sandbox.url), { logger: demoLogger(config, options.verbose === true) });
    io.out(`sandbox (stand-in for the classroom service) on ${sandbox.url}${options.failRate ? `, failing ${options.failRate * 100}% of calls` : ''}`);
    io.out(`demo data: database ${databaseName(config.databaseUrl)}, queue prefix ${config.queuePrefix} (kept apart from real batches)`);
    const ids = await publishSamples(worker.runtime, options.count);
    io.out(`published ${ids.length} sample batches; worker syncing with concurrency ${config.sync.concurrency}`);
    const started = Date.now();
    const rows = await watch(worker.runtime, ids, io, stop.signal);
    io.out('');
    for (const line of formatMappingTable(rows)) io.out(line);
    io.out('');
    const summary = summarize(rows, sandbox.state({ classes: false }), Date.now() - started);
    for (const line of summary.lines) io.out(line);
    io.out('');
    // With --once (or after Ctrl-C) the servers stop right after this: no URLs or token for them.
    if (options.once || stop.signal.aborted) {
      io.out('The dashboard, batch API and metrics stopped with this run; `npm start` without --once keeps them up.');
    } else {
      for (const line of serverInfo(worker.url, config.http.apiToken, baseConfig.http.apiToken === undefined)) io.out(line);
      await serve(worker.url, config, baseConfig.http.apiToken === undefined, io, stop.signal);
    }
    return summary.allSynced ? 0 : 1;
  } finally {
    stop.dispose();
    await worker?.stop();
    await sandbox.close();
  }
}

/**
 * The demo's own database (`<name>_demo`) and queue prefix (`<prefix>-demo`): sharing the real ones
 * would let the demo's worker take real batches from the queue and "sync" them against the sandbox.
 * The HTTP server listens on loopback only, with API_TOKEN or a token made for this session.
 */
export function demoSettings(config: Config, options: { port?: number } = {}): DemoConfig {
  const url = new URL(config.databaseUrl);
  const name = databaseName(config.databaseUrl);
  url.pathname = `/${encodeURIComponent(name.endsWith('_demo') ? name : `${name}_demo`)}`;
  const prefix = config.queuePrefix.endsWith('-demo') ? config.queuePrefix : `${config.queuePrefix}-demo`;
  return {
    ...config,
    databaseUrl: url.toString(),
    queuePrefix: prefix,
    // The built-in sandbox shows every write at once (no replica lag), so the demo need not wait
    // SYNC_READ_LAG's production default before believing an empty listing.
    sync: { ...config.sync, readLagMs: Math.min(config.sync.readLagMs, config.sync.settleMs, 2_000) },
    http: {
      ...config.http,
      port: options.port ?? config.http.port,
      host: '127.0.0.1',
      apiToken: config.http.apiToken ?? randomBytes(24).toString('base64url'),
    },
  };
}

function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'classroom_sync';
}

function withBaseUrl(config: Config, baseUrl: string): Config {
  return withClassroom(config, { baseUrl }, { every: true });
}

async function preflight(config: Config, io: DemoIo): Promise<boolean> {
  const findings = await Promise.all([checkPostgres(config.databaseUrl), checkRedis(config.redisUrl)]);
  const failed = findings.filter((f) => f.status === 'fail');
  if (failed.length === 0) return true;
  for (const f of failed) io.out(formatFinding(f));
  io.out(
    'The demo needs PostgreSQL and Redis. Start them with `docker compose up -d postgres redis`, or set DATABASE_URL / REDIS_URL, then run `npm start` again.',
  );
  return false;
}

/** Errors only (retries are counted on the bar), to stderr, so log lines do not tear through the bar. */
function demoLogger(config: Config, verbose: boolean) {
  return createLogger({ level: verbose ? config.logLevel : 'error', destination: pino.destination({ dest: 2, sync: true }) });
}

async function publishSamples(runtime: Runtime, count: number): Promise<string[]> {
  const runId = Date.now().toString(36);
  const events = Array.from({ length: count }, (_, i) => {
    const subject = subjectOf(i);
    return { batchId: `demo-${runId}-${String(i + 1).padStart(3, '0')}`, name: `${subject} group ${i + 1} (${runId})`, subject };
  });
  const outcomes = await publishBatches(publishDepsOf(runtime), events);
  const rejected = outcomes.filter((o) => !o.ok);
  if (rejected.length) throw new Error(`sample batches rejected: ${JSON.stringify(rejected)}`);
  return events.map((e) => e.batchId);
}

/** Polls the mapping table until every batch is terminal (or the user stops), drawing progress. */
async function watch(runtime: Runtime, ids: string[], io: DemoIo, signal: AbortSignal): Promise<BatchRow[]> {
  const progress = createProgress({ label: 'synced', total: ids.length, unit: 'batches', stream: io.stream, intervalMs: 1_000 });
  // Of the institute they were published under: read by the (institute, batch) key, not the whole table.
  const filter = { instituteId: runtime.config.classroom.instituteId, batchIds: ids };
  const read = async () => (await listBatches(runtime.database.db, filter, { limit: ids.length })).rows;
  let rows = await read();
  try {
    for (;;) {
      const done = rows.filter((r) => TERMINAL_STATES.includes(r.state));
      const retries = rows.reduce((n, r) => n + Math.max(0, r.attempts - 1), 0);
      const failed = done.filter((r) => r.state !== 'synced').length;
      progress.update(done.length - failed, { retries, failed });
      if (done.length === ids.length || signal.aborted) return rows;
      await abortableDelay(200, signal);
      rows = await read();
    }
  } finally {
    progress.stop();
  }
}

/** Sample batches go round the subjects. */
function subjectOf(i: number): string {
  const subject = SUBJECTS[i % SUBJECTS.length];
  if (subject === undefined) throw new Error('SUBJECTS is empty: the demo has no subject to give its sample batches');
  return subject;
}

function serverInfo(url: string, token: string, generated: boolean): string[] {
  return [
    `dashboard:  ${url}${DASHBOARD_PATH}  (sign in with any user name and the API token as password)`,
    `batch API:  ${url}/v1/batches  (Authorization: Bearer <API token>)`,
    `metrics:    ${url}/metrics`,
    generated ? `API token for this session: ${token}  (made up for this run; set API_TOKEN to choose one)` : 'API token: the value of API_TOKEN',
  ];
}

async function serve(url: string, config: DemoConfig, tokenGenerated: boolean, io: DemoIo, signal: AbortSignal): Promise<void> {
  io.out('');
  io.out('serving until Ctrl-C (the worker keeps syncing). Publish another batch from another terminal:');
  io.out(
    `  curl -H "Authorization: Bearer ${tokenGenerated ? config.http.apiToken : '$API_TOKEN'}" -H 'content-type: application/json' ` +
      `-d '{"batchId":"B-1001","name":"Algebra I","subject":"Maths"}' ${url}/v1/batches`,
  );
  io.out(`  or: DATABASE_URL=${redactUrl(config.databaseUrl)} QUEUE_PREFIX=${config.queuePrefix} npx classroom-sync enqueue FILE.ndjson`);
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
  io.out('stopping: finishing active jobs');
}

/** SIGINT/SIGTERM end the demo cleanly (worker drained, sandbox closed) instead of killing it mid-write. */
function stopOnSignal() {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    },
  };
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
