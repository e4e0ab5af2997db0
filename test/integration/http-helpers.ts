// Shared by the HTTP tests: a worker process (sync + HTTP server on a free port) over a harness's
// database, queue prefix and sandbox, and small fetch helpers. Real HTTP over loopback throughout.
import { randomBytes } from 'node:crypto';
import { beforeAll } from 'vitest';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { type WorkerProcess, type WorkerProcessOptions, startWorker } from '../../src/commands/worker.ts';
import type { Harness } from '../helpers/harness.ts';
import { standIn } from '../helpers/stand-in.ts';
import type { HarnessScope } from '../helpers/use-harness.ts';

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
