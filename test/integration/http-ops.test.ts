// Probes, metrics, dashboard sign-in and the no-token mode, over real HTTP.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type WorkerProcess, startWorker } from '../../src/commands/worker.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { createLogger } from '../../src/logger.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { createRuntime } from '../../src/runtime.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { createHarness, dropQueueKeys, type Harness, waitFor } from '../helpers/harness.ts';
import { BEARER, TOKEN, basic, call, configFor, rowOf, startTestWorker } from './http-helpers.ts';

let h: Harness;
let w: WorkerProcess;
let url: string;

beforeAll(async () => {
  h = await createHarness();
  w = await startTestWorker(h);
  url = w.url;
});
afterAll(async () => {
  await w?.stop();
  await h?.close();
});

const post = (json: unknown) => call(`${url}/v1/batches`, { method: 'POST', headers: BEARER, json });

/** `name{labels} value` lines of a Prometheus text exposition. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = match[3] ? match[3].split(',') : [];
    if (want.every((l) => have.includes(l)) && have.length === want.length) return Number(match[4]);
  }
  return undefined;
}

function promtool(text: string) {
  return spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
}

describe('probes', () => {
  it('/healthz and /readyz answer 200 without credentials', async () => {
    expect(await call(`${url}/healthz`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await call(`${url}/readyz`)).toMatchObject({ status: 200, body: { status: 'ready', checks: { redis: 'ok', postgres: 'ok' } } });
  });

  it('/readyz answers 503 naming Redis when Redis does not answer, and Postgres when it does not', async () => {
    for (const [override, failing] of [
      [{ REDIS_URL: 'redis://127.0.0.1:1' }, 'redis'],
      [{ DATABASE_URL: `${h.env.DATABASE_URL}_missing` }, 'postgres'],
    ] as const) {
      const runtime = createRuntime(configFor(h, override), { logger: createLogger({ level: 'silent' }) });
      const server = await createHttpServer({ runtime, metrics: createMetrics({ defaultMetrics: false }), probeTimeoutMs: 500 });
      try {
        const base = await server.listen({ port: 0, host: '127.0.0.1' });
        expect((await call(`${base}/healthz`)).status).toBe(200);
        const ready = await call(`${base}/readyz`);
        expect(ready.status).toBe(503);
        expect(ready.body).toMatchObject({ status: 'unavailable', failing: [failing] });
        expect(ready.body.checks[failing]).not.toBe('ok');
        // The scrape still answers, counting the failed source instead of hanging or erroring.
        const metrics = await call(`${base}/metrics`);
        expect(metrics.status).toBe(200);
        expect(sample(metrics.text, 'classroom_sync_scrape_errors_total', { source: failing })).toBeGreaterThanOrEqual(1);
      } finally {
        await server.close();
        await runtime.close();
      }
    }
  });
});

describe('/metrics', () => {
  it('reports jobs, transitions, time to synced, remote calls, batches by state and queue jobs; promtool accepts it', async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
    await post({ batchId: 'm-rejected', name: 'Metrics rejected', subject: 'Maths' });
    await waitFor(async () => (await rowOf(h, 'm-rejected'))?.state === 'failed', 'm-rejected failed');
    const events = Array.from({ length: 6 }, (_, i) => ({ batchId: `m-${i}`, name: `Metrics ${i}`, subject: 'Maths' }));
    await post(events);
    await waitFor(async () => (await Promise.all(events.map((e) => rowOf(h, e.batchId)))).every((r) => r?.state === 'synced'), 'metrics batches synced');

    const answer = await call(`${url}/metrics`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = answer.text;
    const check = promtool(text);
    expect(check.status, `${check.stdout}\n${check.stderr}`).toBe(0);

    expect(sample(text, 'classroom_sync_batches', { state: 'synced' })).toBe(6);
    expect(sample(text, 'classroom_sync_batches', { state: 'failed' })).toBe(1);
    expect(sample(text, 'classroom_sync_batches', { state: 'pending' })).toBe(0);
    expect(sample(text, 'classroom_sync_event_to_synced_seconds_count')).toBe(6);
    expect(sample(text, 'classroom_sync_transitions_total', { from: 'link_enabled', to: 'synced' })).toBe(6);
    expect(sample(text, 'classroom_sync_transitions_total', { from: 'pending', to: 'failed' })).toBe(1);
    expect(sample(text, 'classroom_sync_jobs_total', { result: 'completed' })).toBe(6);
    expect(sample(text, 'classroom_sync_jobs_total', { result: 'failed' })).toBe(1);
    expect(sample(text, 'classroom_sync_remote_calls_total', { operation: 'addClass', outcome: 'ok' })).toBe(6);
    expect(sample(text, 'classroom_sync_remote_calls_total', { operation: 'addClass', outcome: 'rejected' })).toBe(1);
    expect(sample(text, 'classroom_sync_remote_calls_total', { operation: 'getClass', outcome: 'ok' })).toBe(6);
    expect(sample(text, 'classroom_sync_remote_call_duration_seconds_count', { operation: 'editClass', outcome: 'ok' })).toBe(6);
    expect(sample(text, 'classroom_sync_queue_jobs', { queue: 'batch-sync', state: 'completed' })).toBe(6);
    expect(sample(text, 'classroom_sync_queue_jobs', { queue: 'batch-sync', state: 'failed' })).toBe(1);
    expect(sample(text, 'classroom_sync_queue_jobs', { queue: 'reconcile', state: 'failed' })).toBe(0);
    expect(sample(text, 'classroom_sync_rate_limit_wait_seconds_count')).toEqual(expect.any(Number));
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
  });

  it('counts rate-limit waits reported by the runtime\'s limiter', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const config = configFor(h, { CLASSROOM_RATE_LIMIT_PER_MINUTE: '600', QUEUE_PREFIX: `${h.config.queuePrefix}-rl` });
    const runtime = createRuntime(config, { ...metrics.runtimeOptions, logger: createLogger({ level: 'silent' }) });
    try {
      // 600 a minute is one slot per 100 ms: the second and third calls must wait for theirs.
      await Promise.all([runtime.limiter.acquire(), runtime.limiter.acquire(), runtime.limiter.acquire()]);
      const text = await metrics.registry.metrics();
      expect(sample(text, 'classroom_sync_rate_limit_wait_seconds_count')).toBe(2);
      expect(sample(text, 'classroom_sync_rate_limit_wait_seconds_sum')).toBeGreaterThan(0.2);
    } finally {
      await runtime.close();
      await dropQueueKeys(config.queuePrefix);
    }
  });

  it('reports reconciliation runs recorded through recordReconciliation', async () => {
    const finishedAt = new Date('2026-01-02T03:04:05Z');
    w.metrics.recordReconciliation({ counts: { in_sync: 40, drift: 2, orphan: 1 }, finishedAt, ok: true, durationMs: 1_500 });
    w.metrics.recordReconciliation({ counts: { in_sync: 0 }, finishedAt: new Date('2026-01-02T03:19:05Z'), ok: false });
    const text = (await call(`${url}/metrics`)).text;
    expect(promtool(text).status).toBe(0);
    expect(sample(text, 'classroom_sync_reconcile_items', { category: 'drift' })).toBe(2);
    expect(sample(text, 'classroom_sync_reconcile_items', { category: 'in_sync' })).toBe(40);
    expect(sample(text, 'classroom_sync_reconcile_last_success_timestamp_seconds')).toBe(finishedAt.getTime() / 1000);
    expect(sample(text, 'classroom_sync_reconcile_last_run_timestamp_seconds')).toBe(Date.parse('2026-01-02T03:19:05Z') / 1000);
    expect(sample(text, 'classroom_sync_reconcile_runs_total', { result: 'ok' })).toBe(1);
    expect(sample(text, 'classroom_sync_reconcile_runs_total', { result: 'error' })).toBe(1);
    expect(sample(text, 'classroom_sync_reconcile_duration_seconds')).toBe(1.5);
  });

  it('requires the token when metrics auth is on', async () => {
    const guarded = await startTestWorker(h, {}, { metricsAuth: true });
    try {
      const open = await call(`${guarded.url}/metrics`);
      expect(open.status).toBe(401);
      expect((await call(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-value' } })).status).toBe(401);
      expect((await call(`${guarded.url}/metrics`, { headers: BEARER })).status).toBe(200);
      expect((await call(`${guarded.url}/metrics`, { headers: basic('prometheus', TOKEN) })).status).toBe(200);
      expect((await call(`${guarded.url}/healthz`)).status).toBe(200);
    } finally {
      await guarded.stop();
    }
  });
});

describe('dashboard sign-in', () => {
  it('challenges a browser with Basic, and accepts Basic (any user) or Bearer with the token', async () => {
    const anonymous = await call(`${url}/admin/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic realm="classroom-sync"/);
    expect((await call(`${url}/admin/queues`, { headers: basic('ops', 'not-the-token') })).status).toBe(401);
    expect((await call(`${url}/admin/queues/api/queues`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);

    const page = await call(`${url}/admin/queues`, { headers: basic('anyone', TOKEN) });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>classroom-sync</title>');
    const queues = await call(`${url}/admin/queues/api/queues`, { headers: BEARER });
    expect(queues.status).toBe(200);
    expect(queues.body.queues.map((q: { name: string }) => q.name).sort()).toEqual(['batch-sync', 'reconcile']);
  });

  it('refuses a cross-site change made with a browser\'s Basic credentials', async () => {
    const jobId = jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'm-rejected' });
    const crossSite = await call(`${url}/admin/queues/api/queues/batch-sync/${jobId}/retry`, {
      method: 'PUT',
      headers: { ...basic('ops', TOKEN), origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(crossSite.status).toBe(403);
    expect((await rowOf(h, 'm-rejected'))?.state).toBe('failed');
  });

  it('a dashboard retry of a failed sync job puts the batch back, and it syncs', async () => {
    const jobId = jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'm-rejected' });
    expect(await w.runtime.queue.getJobState(jobId)).toBe('failed');
    const retry = await call(`${url}/admin/queues/api/queues/batch-sync/${jobId}/retry`, { method: 'PUT', headers: BEARER });
    expect(retry.status).toBe(204);
    await waitFor(async () => (await rowOf(h, 'm-rejected'))?.state === 'synced', 'm-rejected synced after the dashboard retry');
    await waitFor(async () => (await w.runtime.queue.getJobState(jobId)) === 'completed', 'retried job completed');
  });
});

describe('dashboard retry-all', () => {
  it('puts every failed sync batch back, and they sync', async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected', count: 2 });
    await post([{ batchId: 'ra-1', name: 'Retry all 1', subject: 'Art' }, { batchId: 'ra-2', name: 'Retry all 2', subject: 'Art' }]);
    await waitFor(async () => (await rowOf(h, 'ra-1'))?.state === 'failed' && (await rowOf(h, 'ra-2'))?.state === 'failed', 'ra-* failed');
    const answer = await call(`${url}/admin/queues/api/queues/batch-sync/retry/failed`, { method: 'PUT', headers: BEARER });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ retried: 2, skipped: 0 });
    await waitFor(async () => (await rowOf(h, 'ra-1'))?.state === 'synced' && (await rowOf(h, 'ra-2'))?.state === 'synced', 'ra-* synced');
    expect(await w.runtime.queue.getJobCounts('failed')).toEqual({ failed: 0 });
  });
});

describe('without API_TOKEN', () => {
  it('serves probes and metrics, and answers 503 for the API and the dashboard', async () => {
    const config = configFor(h, { API_TOKEN: '' });
    expect(config.http.apiToken).toBeUndefined();
    const open = await startWorker(config);
    try {
      expect((await call(`${open.url}/healthz`)).status).toBe(200);
      expect((await call(`${open.url}/readyz`)).status).toBe(200);
      expect((await call(`${open.url}/metrics`)).status).toBe(200);
      for (const path of ['/v1/batches', '/v1/batches/api-1', '/admin/queues', '/admin/queues/api/queues']) {
        const answer = await call(`${open.url}${path}`, { headers: BEARER });
        expect(answer.status, path).toBe(503);
        expect(answer.body.error).toBe('api_disabled');
      }
      const posted = await call(`${open.url}/v1/batches`, { method: 'POST', json: { batchId: 'no-token', name: 'n', subject: 's' } });
      expect(posted.status).toBe(503);
      expect(await rowOf(h, 'no-token')).toBeUndefined();
    } finally {
      await open.stop();
    }
  });

  it('a second worker on a taken PORT fails to start with a clear message', async () => {
    const port = new URL(url).port;
    await expect(startWorker(configFor(h, { PORT: port }))).rejects.toThrow(`PORT ${port} is already in use`);
  });
});
