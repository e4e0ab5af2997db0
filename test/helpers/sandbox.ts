// Shared by the tests of the sandbox itself (and of the client against it): a sandbox on a free
// port, for the file or for one test, a bare fetch-based caller and its control endpoint.
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { sandboxOptionsFromConfig, startSandbox, type RunningSandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { standIn } from './stand-in.ts';

export const config = loadConfig({});
export const creds = sandboxOptionsFromConfig(config).credentials;
export const INSTITUTE = config.classroom.instituteId;

/** A sandbox of the default settings, seed 42, on a free port; the caller closes it. */
export function start(overrides: Partial<SandboxOptions> = {}): Promise<RunningSandbox> {
  return startSandbox({ ...sandboxOptionsFromConfig(config), seed: 42, ...overrides }, { port: 0 });
}

/**
 * The file's sandbox (`start(overrides)` in beforeAll, closed in afterAll), emptied before each test:
 * no faults, no classes, no counted calls. A stand-in: use it in hooks and tests.
 */
export function useSandbox(overrides: Partial<SandboxOptions> = {}): RunningSandbox {
  let sb: RunningSandbox | undefined;
  beforeAll(async () => {
    sb = await start(overrides);
  });
  afterAll(() => sb?.close());
  beforeEach(() => {
    sb?.faults.clear();
    sb?.reset();
  });
  return standIn('the sandbox', () => sb);
}

/** A call to the sandbox's control endpoint (`/__sandbox…`), which needs no credentials. */
export async function control(sb: RunningSandbox, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const res = await fetch(`${sb.url}/__sandbox${path}`, init);
  return { status: res.status, json: (await res.json()) as any };
}

export function goodHeaders(): Record<string, string> {
  return {
    authorization: `Basic ${Buffer.from(`${creds.userId}:${creds.apiKey}`).toString('base64')}`,
    'x-api-key': creds.xApiKey,
    'user-agent': creds.userAgent,
    [creds.namespaceHeader]: creds.namespace,
    'content-type': 'application/json',
  };
}

export interface CallOptions {
  body?: unknown;
  /** Replaces headers; a null value removes the header. */
  headers?: Record<string, string | null>;
  signal?: AbortSignal;
}

export async function call(sb: RunningSandbox, method: string, path: string, options: CallOptions = {}) {
  const headers: Record<string, string> = goodHeaders();
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === null) delete headers[name];
    else headers[name] = value;
  }
  const init: RequestInit = { method, headers };
  if (options.body !== undefined) init.body = JSON.stringify(options.body);
  if (options.signal) init.signal = options.signal;
  const response = await fetch(sb.url + path, init);
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export const addClass = (sb: RunningSandbox, name = 'Algebra 1', options: CallOptions = {}) =>
  call(sb, 'POST', '/addClass', { body: { name, subject: 'Maths', instituteId: INSTITUTE }, ...options });

export const listing = (sb: RunningSandbox, query = '') => call(sb, 'GET', `/institutes/${INSTITUTE}/classes${query}`);

/** Polls until `check` passes (never a fixed sleep); fails after `ms`. */
export async function eventually<T>(check: () => T | Promise<T>, ms = 2_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
