// Probes, metrics, dashboard sign-in and the no-token mode, over real HTTP.
import { describe, expect, it } from 'vitest';
import { startWorker } from '../../src/commands/worker.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { createRuntime } from '../../src/runtime/runtime.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { rowOf, untilAllSynced } from '../helpers/batches.ts';
import { dropQueueKeys, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, TOKEN, basic, call, configFor, startTestWorker, useTestWorker } from './http-helpers.ts';
import { promtool as runPromtool } from '../helpers/promql.ts';
import { httpSettingsOf } from '../../src/http/settings.ts';

const harness = useHarness();
const { h } = harness;
const w = useTestWorker(harness);

const post = (json: unknown) => call(`${w.url}/v1/batches`, { method: 'POST', headers: BEARER, json });

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

/** `promtool check metrics`; fails with one line naming the fix when promtool is not installed. */
function promtool(text: string) {
  return runPromtool(['check', 'metrics'], { input: text });
}

describe('probes', () => {
  it('/healthz and /readyz answer 200 without credentials', async () => {
    expect(await call(`${w.url}/healthz`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await call(`${w.url}/readyz`)).toMatchObject({ status: 200, body: { status: 'ready', checks: { redis: 'ok', postgres: 'ok' } } });
  });

  it('/readyz answers 503 naming Redis when Redis does not answer, and Postgres when it does not, in its own words; the log has the error once', async () => {
    for (const [override, failing, reasons, detail] of [
      [{ REDIS_URL: 'redis://127.0.0.1:1' }, 'redis', /^(not connected|timed out after 500 ms)$/, /./],
      [{ DATABASE_URL: `${h.env.DATABASE_URL}_missing` }, 'postgres', /^database missing$/, /database ".*_missing" does not exist/],
    ] as const) {
      const lines: { level: number; msg: string; check?: string; err?: { message?: string } }[] = [];
      const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
      const runtime = createRuntime(configFor(h, override), { logger });
      const server = await createHttpServer(
        { ...runtime, httpSettings: httpSettingsOf(runtime.config), metrics: createMetrics({ defaultMetrics: false }), publish: publishDepsOf(runtime) },
        { probeTimeoutMs: 500 },
      );
      try {
        const base = await server.listen({ port: 0, host: '127.0.0.1' });
        expect((await call(`${base}/healthz`)).status).toBe(200);
        const seen: string[] = [];
        for (let probe = 0; probe < 3; probe++) {
          const ready = await call(`${base}/readyz`);
          expect(ready.status).toBe(503);
          expect(ready.body).toMatchObject({ status: 'unavailable', failing: [failing] });
          expect(ready.body.checks[failing]).toMatch(reasons);
          seen.push(ready.body.checks[failing]);
        }
        // A warn line when the failure starts (or its reason changes), debug lines while it lasts;
        // the error itself only there.
        const logged = lines.filter((l) => l.check === failing);
        const changes = seen.filter((reason, i) => reason !== seen[i - 1]).length;
        expect(logged.filter((l) => l.level === 40)).toHaveLength(changes);
        expect(logged.filter((l) => l.level === 20)).toHaveLength(seen.length - changes);
        expect(logged[0]).toMatchObject({ msg: `readiness: ${failing} is not answering (${seen[0]})`, err: { message: expect.stringMatching(detail) } });
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
    await untilAllSynced(
      h,
      events.map((e) => e.batchId),
    );

    const answer = await call(`${w.url}/metrics`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = answer.text;
    const check = promtool(text);
    expect(check.status, check.output).toBe(0);

    expect(sample(text, 'classroom_sync_batches', { state: 'synced' })).toBe(6);
    expect(sample(text, 'classroom_sync_batches', { state: 'failed' })).toBe(1);
    expect(sample(text, 'classroom_sync_batches', { state: 'pending' })).toBe(0);
    expect(sample(text, 'classroom_sync_event_to_synced_seconds_count')).toBe(6);
    expect(sample(text, 'classroom_sync_transitions_total', { from: 'link_enabled', to: 'synced' })).toBe(6);
    expect(sample(text, 'classroom_sync_transitions_total', { from: 'pending', to: 'failed' })).toBe(1);
    expect(sample(text, 'classroom_sync_jobs_total', { result: 'completed' })).toBe(6);
    expect(sample(text, 'classroom_sync_jobs_total', { result: 'failed' })).toBe(1);
    expect(sample(text, 'classroom_sync_remote_calls_total', { account: 'default', operation: 'addClass', outcome: 'ok' })).toBe(6);
    expect(sample(text, 'classroom_sync_remote_calls_total', { account: 'default', operation: 'addClass', outcome: 'rejected' })).toBe(1);
    expect(sample(text, 'classroom_sync_remote_calls_total', { account: 'default', operation: 'getClass', outcome: 'ok' })).toBe(6);
    expect(sample(text, 'classroom_sync_remote_call_duration_seconds_count', { account: 'default', operation: 'editClass', outcome: 'ok' })).toBe(6);
    expect(sample(text, 'classroom_sync_queue_jobs', { queue: 'batch-sync', state: 'completed' })).toBe(6);
    expect(sample(text, 'classroom_sync_queue_jobs', { queue: 'batch-sync', state: 'failed' })).toBe(1);
    expect(sample(text, 'classroom_sync_queue_jobs', { queue: 'reconcile', state: 'failed' })).toBe(0);
    // Present whether or not a call had to wait (under load the calls may be spaced out enough not to).
    expect(sample(text, 'classroom_sync_rate_limit_wait_seconds_count', { account: 'default' })).toBeGreaterThanOrEqual(0);
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
  });

  it("exports each account's rate-limit waits and slots as 0 before any call, so a quiet account is not absent", async () => {
    const metrics = createMetrics({ defaultMetrics: false, accounts: [{ name: 'north', ratePerMinute: 60 }] });
    const text = await metrics.registry.metrics();
    expect(sample(text, 'classroom_sync_rate_limit_wait_seconds_count', { account: 'north' })).toBe(0);
    expect(sample(text, 'classroom_sync_rate_limit_wait_seconds_bucket', { account: 'north', le: '+Inf' })).toBe(0);
    for (const lane of ['under_way', 'live', 'operator', 'backfill']) {
      expect(sample(text, 'classroom_sync_rate_limit_slots_total', { account: 'north', lane })).toBe(0);
    }
  });

  it("counts rate-limit waits reported by the runtime's limiter", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const config = configFor(h, { CLASSROOM_RATE_LIMIT_PER_MINUTE: '120', QUEUE_PREFIX: `${h.config.queuePrefix}-rl` });
    const runtime = createRuntime(config, { ...metrics.runtimeOptions, logger: createLogger({ level: 'silent' }) });
    try {
      // 120 a minute is one slot per 510 ms: the second and third calls must wait for theirs, and a
      // timer firing a little late is still on time (a caller later than one slot would wait again).
      await Promise.all([runtime.remotes.default.limiter.acquire(), runtime.remotes.default.limiter.acquire(), runtime.remotes.default.limiter.acquire()]);
      const text = await metrics.registry.metrics();
      expect(sample(text, 'classroom_sync_rate_limit_wait_seconds_count', { account: 'default' })).toBe(2);
      expect(sample(text, 'classroom_sync_rate_limit_wait_seconds_sum', { account: 'default' })).toBeGreaterThan(1);
    } finally {
      await runtime.close();
      await dropQueueKeys(config.queuePrefix);
    }
  });

  it('exports no reconciliation timestamps or duration before a pass has finished, and no success time before a success', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const names = [
      'classroom_sync_reconcile_last_success_timestamp_seconds',
      'classroom_sync_reconcile_last_run_timestamp_seconds',
      'classroom_sync_reconcile_duration_seconds',
    ];
    const fresh = await metrics.registry.metrics();
    for (const name of names) expect(sample(fresh, name), name).toBeUndefined();
    expect(promtool(fresh).status).toBe(0);

    metrics.recordReconciliation({ counts: {}, finishedAt: new Date('2026-01-02T03:04:05Z'), ok: false, durationMs: 200 });
    const afterFailure = await metrics.registry.metrics();
    expect(sample(afterFailure, 'classroom_sync_reconcile_last_success_timestamp_seconds')).toBeUndefined();
    expect(sample(afterFailure, 'classroom_sync_reconcile_last_run_timestamp_seconds')).toBe(Date.parse('2026-01-02T03:04:05Z') / 1000);
    expect(sample(afterFailure, 'classroom_sync_reconcile_duration_seconds')).toBe(0.2);
  });

  it('reports reconciliation runs recorded through recordReconciliation', async () => {
    const finishedAt = new Date('2026-01-02T03:04:05Z');
    w.metrics.recordReconciliation({ counts: { in_sync: 40, drift: 2, orphan: 1 }, finishedAt, ok: true, durationMs: 1_500 });
    w.metrics.recordReconciliation({ counts: { in_sync: 0 }, finishedAt: new Date('2026-01-02T03:19:05Z'), ok: false });
    const text = (await call(`${w.url}/metrics`)).text;
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
    const anonymous = await call(`${w.url}/admin/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic realm="classroom-sync"/);
    expect((await call(`${w.url}/admin/queues`, { headers: basic('ops', 'not-the-token') })).status).toBe(401);
    expect((await call(`${w.url}/admin/queues/api/queues`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);

    const page = await call(`${w.url}/admin/queues`, { headers: basic('anyone', TOKEN) });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>classroom-sync</title>');
    const queues = await call(`${w.url}/admin/queues/api/queues`, { headers: BEARER });
    expect(queues.status).toBe(200);
    expect(queues.body.queues.map((q: { name: string }) => q.name).sort()).toEqual(['batch-sync', 'batch-sync-background', 'reconcile']);
  });

  it("refuses a cross-site change made with a browser's Basic credentials", async () => {
    const jobId = jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'm-rejected' });
    const crossSite = await call(`${w.url}/admin/queues/api/queues/batch-sync/${jobId}/retry`, {
      method: 'PUT',
      headers: { ...basic('ops', TOKEN), origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(crossSite.status).toBe(403);
    expect((await rowOf(h, 'm-rejected'))?.state).toBe('failed');
  });

  it('gives a Basic sign-in a session cookie (not the token) that alone signs in, and refuses a forged or cross-site one', async () => {
    const page = await call(`${w.url}/admin/queues`, { headers: basic('anyone', TOKEN) });
    const setCookie = page.headers.get('set-cookie') ?? '';
    // The client's name (API_TOKEN's client here), an expiry time and a signature.
    expect(setCookie).toMatch(/^classroom_sync_dashboard=API_TOKEN\.\d+\.[\w-]{43}; Path=\/admin\/queues; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    expect(setCookie).not.toContain(TOKEN);
    const cookie = setCookie.split(';')[0]!;
    expect((await call(`${w.url}/admin/queues/api/queues`, { headers: { cookie } })).status).toBe(200);
    // Scripts with a Bearer token get no cookie; a request already holding a good one gets no new one.
    expect((await call(`${w.url}/admin/queues`, { headers: BEARER })).headers.get('set-cookie')).toBeNull();
    expect((await call(`${w.url}/admin/queues`, { headers: { ...basic('anyone', TOKEN), cookie } })).headers.get('set-cookie')).toBeNull();

    const [name, expires, signature] = cookie.split('=')[1]!.split('.');
    for (const forged of [`${name}.${expires}.${'A'.repeat(43)}`, `${name}.9999999999.${signature}`, `${expires}.${signature}`, 'x']) {
      expect((await call(`${w.url}/admin/queues/api/queues`, { headers: { cookie: `classroom_sync_dashboard=${forged}` } })).status, forged).toBe(401);
    }
    const jobId = jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'm-rejected' });
    const crossSite = await call(`${w.url}/admin/queues/api/queues/batch-sync/${jobId}/retry`, {
      method: 'PUT',
      headers: { cookie, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(crossSite.status).toBe(403);
  });

  it('serves a page that loads nothing from the internet, under a policy that forbids it', async () => {
    const page = await call(`${w.url}/admin/queues`, { headers: basic('anyone', TOKEN) });
    expect(page.text).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(page.text).toContain('<script src="/admin/queues/drop-url-credentials.js"></script>');
    expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'self'; script-src 'self';/);
    const script = await call(`${w.url}/admin/queues/drop-url-credentials.js`, { headers: basic('anyone', TOKEN) });
    expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
  });

  it('a dashboard retry of a failed sync job puts the batch back, and it syncs', async () => {
    const jobId = jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'm-rejected' });
    expect(await w.runtime.queue.getJobState(jobId)).toBe('failed');
    const retry = await call(`${w.url}/admin/queues/api/queues/batch-sync/${jobId}/retry`, { method: 'PUT', headers: BEARER });
    expect(retry.status).toBe(204);
    await waitFor(async () => (await rowOf(h, 'm-rejected'))?.state === 'synced', 'm-rejected synced after the dashboard retry');
    // Put back by an operator: its job ran in the operator lane, in the background queue.
    await waitFor(async () => (await w.runtime.queue.background.getJobState(jobId)) === 'completed', 'retried job completed');
    expect(await w.runtime.queue.getJobState(jobId)).toBe('unknown');
  });
});

describe('dashboard retry-all', () => {
  it('puts every failed sync batch back, and they sync', async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected', count: 2 });
    await post([
      { batchId: 'ra-1', name: 'Retry all 1', subject: 'Art' },
      { batchId: 'ra-2', name: 'Retry all 2', subject: 'Art' },
    ]);
    await waitFor(async () => (await rowOf(h, 'ra-1'))?.state === 'failed' && (await rowOf(h, 'ra-2'))?.state === 'failed', 'ra-* failed');
    const answer = await call(`${w.url}/admin/queues/api/queues/batch-sync/retry/failed`, { method: 'PUT', headers: BEARER });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ retried: 2, skipped: 0 });
    await untilAllSynced(h, ['ra-1', 'ra-2']);
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
    const port = new URL(w.url).port;
    await expect(startWorker(configFor(h, { PORT: port }))).rejects.toThrow(`PORT ${port} is already in use`);
  });
});
