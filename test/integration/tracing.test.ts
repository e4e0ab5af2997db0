// Tracing end to end, as an operator turns it on: `classroom-sync worker` started with the standard
// OTEL_* variables exports to an OTLP/HTTP receiver in this process. One batch is one trace, from the
// POST that carried a W3C traceparent (or the integrator's own span around a library publish), through
// the queue, to the three remote calls and the statements, with no secret in any span.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ProxyTracer, SpanKind, trace } from '@opentelemetry/api';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClassroomSync } from '../../src/library/classroom-sync.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { DASHBOARD_PATH } from '../../src/http/dashboard.ts';
import { untracedRequest } from '../../src/telemetry/instrumentations.ts';
import { queueTelemetry } from '../../src/telemetry/queue-telemetry.ts';
import { startTracing } from '../../src/telemetry/start.ts';
import { rowOf, untilSynced } from '../helpers/batches.ts';
import { type RunningCli, killAllChildren, runCli, scratchDir, startCli } from '../helpers/cli.ts';
import { waitFor } from '../helpers/harness.ts';
import { type OtlpReceiver, type ReceivedSpan, SPAN_KIND, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { type Receiver as WebhookReceiver, newSecret, startReceiver } from '../helpers/webhook-receiver.ts';

const TOKEN = `tok-${randomBytes(16).toString('hex')}`;
const { h, defer } = useHarness();
defer(killAllChildren);
let receiver: OtlpReceiver;

beforeAll(async () => {
  const started = await startOtlpReceiver();
  receiver = started;
  defer(() => started.close());
});

/** The child's OTLP settings: JSON (readable here), exported every 200 ms rather than every 5 s. */
const otelEnv = (): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '200',
});

function startWorkerCli(extra: Record<string, string> = {}): RunningCli {
  return startCli(['worker'], {
    env: { ...h.env, API_TOKEN: TOKEN, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', RECONCILE_EVERY: '0', CLASSROOM_TIMEOUT: '5s', ...extra },
    timeoutMs: 120_000,
  });
}

async function urlOf(cli: RunningCli): Promise<string> {
  const [line] = await cli.waitForOutput(/^\{.*"msg":"worker started".*\}$/m, 'worker started');
  return (JSON.parse(line) as { url: string }).url;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** POST /v1/batches of one batch, with a W3C traceparent naming `traceId` and the caller's span `parentId`. */
function postTraced(url: string, batch: { batchId: string; name: string }, traceId = hex(16), parentId = hex(8)): Promise<Response> {
  return fetch(`${url}/v1/batches`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', traceparent: `00-${traceId}-${parentId}-01` },
    body: JSON.stringify([{ ...batch, subject: 'Maths' }]),
  });
}
const inTrace = (traceId: string) => receiver.spans().filter((s) => s.traceId === traceId);
const consumerSpansOf = (batchId: string) =>
  receiver.spans().filter((s) => s.kind === SPAN_KIND.consumer && s.attributes['classroom_sync.batch_id'] === batchId);
const remoteCalls = (spans: ReceivedSpan[]) => spans.filter((s) => s.kind === SPAN_KIND.client && String(s.attributes['url.full']).startsWith(h.sandbox.url));

/** Waits until the run that synced `batchId` and its three remote calls have been exported; the batch's trace. */
async function syncedTrace(batchId: string): Promise<ReceivedSpan[]> {
  return waitFor(() => {
    const run = consumerSpansOf(batchId).find((s) => s.attributes['classroom_sync.outcome'] === 'synced');
    const spans = run ? inTrace(run.traceId) : [];
    return remoteCalls(spans).length >= 3 ? spans : undefined;
  }, `the spans of ${batchId}`);
}

function expectNoSecret(spans: ReceivedSpan[], secrets: string[]): void {
  for (const secret of secrets) {
    expect(secret.length).toBeGreaterThan(8);
    const leaks = spans.filter((s) => s.allValues.some((value) => value.includes(secret)));
    expect(leaks.map((s) => s.name)).toEqual([]);
  }
}

describe('tracing off (no OTEL_* variables)', () => {
  // First in the file: the library test below registers an SDK in this process.
  it('starts no SDK: no tracer provider, no BullMQ telemetry', async () => {
    expect(await startTracing({})).toBeUndefined();
    expect(await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(trace.getTracer('x')).toBeInstanceOf(ProxyTracer);
    expect(queueTelemetry()).toBeUndefined();
  });

  it('syncs as before and exports nothing', async () => {
    const before = receiver.requests();
    const worker = startWorkerCli();
    const url = await urlOf(worker);
    await postTraced(url, { batchId: 'untraced-1', name: 'Untraced' });
    await untilSynced(h, 'untraced-1');
    worker.signal('SIGTERM');
    expect((await worker.result).code).toBe(0);
    expect(receiver.requests()).toBe(before);
    expect((await rowOf(h, 'untraced-1'))?.state).toBe('synced');
  });
});

describe('tracing on (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  let worker: RunningCli;
  let url: string;
  let webhooks: WebhookReceiver;
  const webhookSecret = newSecret();
  beforeAll(async () => {
    const started = await startReceiver();
    webhooks = started;
    defer(() => started.close());
    // Webhook delivery runs in a worker thread that starts no SDK: delivered, and in no span.
    worker = startWorkerCli({ ...otelEnv(), WEBHOOK_URL: webhooks.url, WEBHOOK_SECRET: webhookSecret });
    url = await urlOf(worker);
  });
  // If a test failed before the last one stopped it (killAllChildren still ends it at teardown).
  afterAll(() => worker.signal('SIGTERM'));

  it('makes one trace of a batch: the POST with a traceparent, the queue, the three remote calls, the statements', async () => {
    const [traceId, parentId] = [hex(16), hex(8)];
    const answer = await postTraced(url, { batchId: 'traced-1', name: 'Traced Batch' }, traceId, parentId);
    expect(answer.status).toBe(202);
    const row = await untilSynced(h, 'traced-1');
    const spans = await syncedTrace('traced-1');

    // Everything of this batch is in the traceparent's trace: its runs and every remote call made.
    expect(new Set(consumerSpansOf('traced-1').map((s) => s.traceId))).toEqual(new Set([traceId]));
    expect(new Set(remoteCalls(receiver.spans()).map((s) => s.traceId))).toEqual(new Set([traceId]));
    // One tree under the caller's span: the request is its child, every other span a descendant.
    const server = spans.filter((s) => s.kind === SPAN_KIND.server);
    expect(server).toHaveLength(1);
    expect(server[0]!.parentSpanId).toBe(parentId);
    expect(server[0]!.attributes['http.route']).toBe('/v1/batches');
    const ids = new Set(spans.map((s) => s.spanId));
    expect(spans.filter((s) => !ids.has(s.parentSpanId ?? '')).map((s) => s.spanId)).toEqual([server[0]!.spanId]);

    const producer = spans.filter((s) => s.kind === SPAN_KIND.producer);
    expect(producer.length).toBeGreaterThan(0);
    const [run] = consumerSpansOf('traced-1');
    expect(run!.name).toBe('process batch-sync');
    expect(producer.map((s) => s.spanId)).toContain(run!.parentSpanId);
    expect(run!.attributes).toMatchObject({
      'classroom_sync.institute_id': h.config.classroom.instituteId,
      'classroom_sync.batch_id': 'traced-1',
      'classroom_sync.lane': 'live',
      'classroom_sync.attempt': 1,
      'classroom_sync.outcome': 'synced',
    });

    // add-class, edit-class (the join link), get-class: children of the run, in that order.
    const calls = remoteCalls(spans).sort(
      (a, b) => Number(a.attributes['http.request.method'] === 'GET') - Number(b.attributes['http.request.method'] === 'GET'),
    );
    expect(calls.map((s) => `${s.attributes['http.request.method']} ${s.attributes['url.path']}`)).toEqual([
      `POST ${h.config.classroom.addClassPath}`,
      `${h.config.classroom.editClassMethod} /teacher/editClass`,
      `GET /user/v2/classes/${row.classId}`,
    ]);
    const underRun = (s: ReceivedSpan): boolean => s.parentSpanId === run!.spanId || spans.some((p) => p.spanId === s.parentSpanId && underRun(p));
    expect(calls.every(underRun)).toBe(true);
    expect(calls.map((s) => s.attributes['url.query'])).toContain('?full=…');

    expect(spans.filter((s) => s.scope.includes('instrumentation-pg')).length).toBeGreaterThan(0);
    expect(spans.filter((s) => s.scope.includes('instrumentation-ioredis')).length).toBeGreaterThan(0);
    expect(spans.every((s) => s.service === 'classroom-sync')).toBe(true);
    // The batch's webhook went out from its thread, untraced.
    await waitFor(() => webhooks.received.some((r) => r.message.data.batchId === 'traced-1'), 'the webhook of traced-1');
    expect(receiver.spans().filter((s) => String(s.attributes['url.full']).startsWith(webhooks.url))).toEqual([]);
    // The join link, the remote's keys, the API token and the webhook secret: in no attribute of any span exported.
    expectNoSecret(receiver.spans(), [row.joinLink!, h.config.classroom.apiKey, h.config.classroom.xApiKey, TOKEN, webhookSecret]);

    // From the batch to its trace: every audit event, the intake's and the worker's, names this trace.
    const [history, text] = await Promise.all([runCli(['history', 'traced-1', '--json'], { env: h.env }), runCli(['history', 'traced-1'], { env: h.env })]);
    const events = JSON.parse(history.stdout) as { type: string; traceId: string | null }[];
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['received', 'transition', 'remote_call']));
    expect(new Set(events.filter((e) => e.type !== 'webhook').map((e) => e.traceId))).toEqual(new Set([traceId]));
    expect(text.stdout).toContain(`trace ${traceId}`);
  });

  it('keeps a retried and a delayed run in the same trace, each a child of where the job was queued', async () => {
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'error5xx' });
    h.sandbox.faults.enqueue({ operation: 'getClass', fault: 'throttle' });
    const traceId = hex(16);
    const answer = await postTraced(url, { batchId: 'traced-retry', name: 'Retried Batch' }, traceId);
    expect(answer.status).toBe(202);
    await untilSynced(h, 'traced-retry');
    await syncedTrace('traced-retry');
    const runs = await waitFor(() => {
      const all = consumerSpansOf('traced-retry');
      return all.length >= 3 ? all : undefined;
    }, 'three runs of traced-retry');
    const outcomes = runs.map((s) => `${s.attributes['classroom_sync.attempt']}:${s.attributes['classroom_sync.outcome']}`);
    expect(outcomes).toEqual(expect.arrayContaining(['1:retrying', '2:deferred', '2:synced']));
    expect(new Set(runs.map((s) => s.traceId))).toEqual(new Set([traceId]));
    // All runs of the one job continue from its one producer span.
    expect(new Set(runs.map((s) => s.parentSpanId)).size).toBe(1);
  });

  it('keeps probes and scrapes out of the traces', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) expect((await fetch(`${url}${path}`)).status).toBe(200);
    // A traced request after them: once it is exported, so would they have been.
    const traceId = hex(16);
    await fetch(`${url}/v1/batches/none`, { headers: { authorization: `Bearer ${TOKEN}`, traceparent: `00-${traceId}-${hex(8)}-01` } });
    await waitFor(() => inTrace(traceId).some((s) => s.kind === SPAN_KIND.server), 'the traced request');
    const routes = receiver.spans().map((s) => s.attributes['http.route']);
    for (const path of ['/healthz', '/readyz', '/metrics']) expect(routes).not.toContain(path);
    // The dashboard's page, assets and polling too (unit-checked: its routes need a browser session).
    expect(untracedRequest({ url: `${DASHBOARD_PATH}/static/main.js`, method: 'GET' })).toBe(true);
    expect(untracedRequest({ url: `${DASHBOARD_PATH}/api/queues?page=1`, method: 'GET' })).toBe(true);
    expect(untracedRequest({ url: `${DASHBOARD_PATH}/api/queues/batch-sync/retry/failed`, method: 'PUT' })).toBe(false);
    expect(untracedRequest({ url: '/metrics?x=1', method: 'GET' })).toBe(true);
  });

  it("continues the caller's trace when a batch is published through the library inside the caller's span", async () => {
    // The integrator's process: its own SDK (here in-memory), registered before the handle is made.
    const exporter = new tracing.InMemorySpanExporter();
    const sdk = new NodeSDK({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)], instrumentations: [], metricReaders: [], logRecordProcessors: [] });
    sdk.start();
    defer(() => sdk.shutdown());
    const library = createClassroomSync(loadConfig(h.env), { logger: createLogger({ level: 'silent' }) });
    defer(() => library.close());
    const callerTrace = await trace.getTracer('integrator').startActiveSpan('import students', async (span) => {
      await library.publishBatchCreated({ batchId: 'traced-lib', name: 'Library Batch', subject: 'Maths' });
      span.end();
      return span.spanContext().traceId;
    });
    await untilSynced(h, 'traced-lib');
    const spans = await syncedTrace('traced-lib');
    expect(spans[0]!.traceId).toBe(callerTrace);
    // Queued by the library (add or addBulk): a producer span in the caller's process and trace.
    const added = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.PRODUCER);
    expect(added?.spanContext().traceId).toBe(callerTrace);
    expect(consumerSpansOf('traced-lib')[0]!.parentSpanId).toBe(added!.spanContext().spanId);
    expect(remoteCalls(spans)).toHaveLength(3);
  });

  it('sends what is left when the worker stops on SIGTERM', async () => {
    worker.signal('SIGTERM');
    expect((await worker.result).code).toBe(0);
    // Closing the queues happens after the drain: its spans are among the last the worker makes.
    expect(receiver.spans().filter((s) => s.name === 'close batch-sync').length).toBeGreaterThan(0);
  });
});

describe('a worker killed in the middle of a run', () => {
  it('leaves the run after the crash, on another worker, in the same trace', async () => {
    // The batch's edit-class hangs: its first run is under way, past add-class, when its worker dies.
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'hang' });
    const first = startWorkerCli(otelEnv());
    const url = await urlOf(first);
    const traceId = hex(16);
    const answer = await postTraced(url, { batchId: 'traced-crash', name: 'Crashed Batch' }, traceId);
    expect(answer.status).toBe(202);
    await waitFor(async () => (await rowOf(h, 'traced-crash'))?.classId, 'the class of traced-crash stored');
    // The other worker starts now, while the first holds the run (it cannot take the batch from a
    // live worker), so that its start-up overlaps the wait for the dead worker's lease.
    const second = startWorkerCli(otelEnv());
    first.signal('SIGKILL');
    await first.result;

    await urlOf(second);
    await untilSynced(h, 'traced-crash');
    const run = await waitFor(
      () => consumerSpansOf('traced-crash').find((s) => s.attributes['classroom_sync.outcome'] === 'synced'),
      'the run that synced traced-crash',
    );
    expect(run.traceId).toBe(traceId);
    second.signal('SIGTERM');
    expect((await second.result).code).toBe(0);
  });
});

describe('short commands', () => {
  it('trace a command as one root span named after it, as classroom-sync unless OTEL_SERVICE_NAME says otherwise', async () => {
    const [ran, named] = await Promise.all([
      runCli(['status', 'traced-none'], { env: { ...h.env, ...otelEnv() } }),
      runCli(['status', 'traced-none'], { env: { ...h.env, ...otelEnv(), OTEL_SERVICE_NAME: 'sync-eu' } }),
    ]);
    expect(ran.stderr).not.toMatch(/could not export/);
    expect(named.stderr).not.toMatch(/could not export/);
    // Exported before each process exited: one root span per command, under its service's name.
    const roots = receiver.spans().filter((s) => s.name === 'classroom-sync status');
    expect(roots.map((s) => s.service).sort()).toEqual(['classroom-sync', 'sync-eu']);
    const root = roots.find((s) => s.service === 'classroom-sync');
    expect(root?.parentSpanId).toBeUndefined();
    expect(inTrace(root!.traceId).some((s) => s.scope.includes('instrumentation-pg'))).toBe(true);
  });

  it('reads OTEL_* from .env in the working directory', async () => {
    const cwd = scratchDir();
    writeFileSync(
      join(cwd, '.env'),
      `${Object.entries(otelEnv())
        .map(([k, v]) => `${k}=${v}`)
        .join('\n')}\nOTEL_SERVICE_NAME=from-dotenv\n`,
    );
    await runCli(['status', 'traced-none'], { env: h.env, cwd });
    expect(receiver.spans().some((s) => s.service === 'from-dotenv')).toBe(true);
  });

  it('export nothing with OTEL_SDK_DISABLED=true, even with an endpoint', async () => {
    const before = receiver.requests();
    const ran = await runCli(['status', 'traced-none'], { env: { ...h.env, ...otelEnv(), OTEL_SDK_DISABLED: 'true' } });
    expect(ran.code).not.toBeNull();
    expect(receiver.requests()).toBe(before);
  });
});
