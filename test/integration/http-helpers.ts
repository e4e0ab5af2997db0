// Shared by the HTTP tests: a worker process (sync + HTTP server on a free port) over a harness's
// database, queue prefix and sandbox, and small fetch helpers. Real HTTP over loopback throughout.
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { beforeAll } from 'vitest';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { type WorkerProcess, type WorkerProcessOptions, startWorker } from '../../src/commands/worker.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { type Runtime, createRuntime, publishDepsOf } from '../../src/runtime/runtime.ts';
import { type Harness, REDIS_URL, dropQueueKeys } from '../helpers/harness.ts';
import { standIn } from '../helpers/stand-in.ts';
import type { HarnessScope } from '../helpers/use-harness.ts';
import { httpSettingsOf } from '../../src/http/settings.ts';

export const TOKEN = `tok-${randomBytes(16).toString('hex')}`;
export const BEARER = { authorization: `Bearer ${TOKEN}` };
export const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

export function configFor(h: Harness, extra: Record<string, string> = {}): Config {
  // No reconciliation schedule: a pass landing mid-test would add remote calls the test did not make.
  return loadConfig({ ...h.env, API_TOKEN: TOKEN, PORT: '0', HOST: '127.0.0.1', RECONCILE_EVERY: '0', ...extra });
}

export async function startTestWorker(h: Harness, extra: Record<string, string> = {}, options: WorkerProcessOptions = {}): Promise<WorkerProcess> {
  return startWorker(configFor(h, extra), options);
}

/** The file's worker process on `scope`'s harness: started in beforeAll, stopped at teardown. A stand-in. */
export function useTestWorker(scope: HarnessScope, extra: Record<string, string> = {}, options: WorkerProcessOptions = {}): WorkerProcess {
  let worker: WorkerProcess | undefined;
  beforeAll(async () => {
    const started = await startTestWorker(scope.h, extra, options);
    worker = started;
    scope.defer(() => started.stop());
  });
  return standIn('the worker process', () => worker);
}

/** An HTTP server alone, on a free loopback port: no sync worker, no sandbox, no database reached. */
export interface LoneServer {
  url: string;
  /** Node's server under Fastify (its connections). */
  node: Server;
  runtime: Runtime;
  close(): Promise<void>;
}

/**
 * For the sign-in surfaces (throttle, sessions): `env` over a fresh queue prefix, real Redis and an
 * API token. Its Redis connection is ready before it serves (until then a server counts failed
 * sign-ins in memory) unless REDIS_URL points elsewhere. `close` drops the prefix's keys when it made the prefix.
 */
export async function startLoneServer(env: Record<string, string> = {}): Promise<LoneServer> {
  const config = loadConfig({
    REDIS_URL,
    QUEUE_PREFIX: `cs-test-http-${randomBytes(4).toString('hex')}`,
    API_TOKEN: TOKEN,
    RECONCILE_EVERY: '0',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const runtime = createRuntime(config);
  if (config.redisUrl === REDIS_URL) await runtime.redis.ping();
  const http = await createHttpServer({
    ...runtime,
    httpSettings: httpSettingsOf(runtime.config),
    metrics: createMetrics({ defaultMetrics: false }),
    publish: publishDepsOf(runtime),
  });
  const url = await http.listen({ port: 0, host: '127.0.0.1' });
  return {
    url,
    node: http.app.server,
    runtime,
    async close() {
      await http.close();
      await runtime.close();
      if (env.QUEUE_PREFIX === undefined && config.redisUrl === REDIS_URL) await dropQueueKeys(config.queuePrefix);
    },
  };
}

export interface Answer<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** fetch, reading the body as JSON when it is JSON. */
export async function call<T = any>(url: string, init: RequestInit & { json?: unknown } = {}): Promise<Answer<T>> {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined) headers.set('content-type', 'application/json');
  const response = await fetch(url, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}) });
  const text = await response.text();
  let body: unknown = text;
  if (response.headers.get('content-type')?.includes('application/json')) body = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: body as T, text };
}
