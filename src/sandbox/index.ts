// A local stand-in for the remote Classroom Management Service: the spec's four operations, the
// live service's variations (configurable), ground truth for tests, and reproducible faults.
import { setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from '../config/config.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';
import { type SandboxAccount, keyStates } from './accounts.ts';
import type { SandboxCredentials } from './auth.ts';
import type { RequestListener, SandboxContext } from './context.ts';
import { groundTruth, registerControlRoutes, type SandboxState } from './control.ts';
import { createFaultController, type FaultConfig, type FaultController } from './faults.ts';
import { deriveSeed, freshSeed, mulberry32, randomHex } from './random.ts';
import { createHangRegistry, failure, send } from './respond.ts';
import { registerRemoteRoutes } from './routes.ts';
import { createStats, type CallStats } from './stats.ts';
import { createStore, type SandboxStore } from './store.ts';

export type { SandboxCredentials } from './auth.ts';
export type { ArrivingRequest, RequestListener } from './context.ts';
export type { SandboxAccount } from './accounts.ts';
export type { SandboxState } from './control.ts';
export type { FaultConfig, FaultController, FaultKind, FaultRates, OneShotFault, SandboxOperation } from './faults.ts';
export { FAULT_KINDS, OPERATIONS, mixedFaultRates } from './faults.ts';
export type { NameRewrite } from './names.ts';
export type { RefuseKey } from './refusal.ts';
export type { CallStats, StatsSnapshot } from './stats.ts';
export type { ClassTruth, NewClass, SandboxStore, StoredClass } from './store.ts';

export interface SandboxOptions {
  /** The primary key (account "default" unless `primaryAccount` names it). */
  credentials: SandboxCredentials;
  /** Institutes the primary key manages; the first one receives hand-made classes that name none. */
  instituteIds: string[];
  primaryAccount?: string | undefined;
  /** More keys, each for its own institutes and with its own rate limit, as several accounts have. */
  accounts?: SandboxAccount[] | undefined;
  /** The primary key's calls per window (default: the fault config's `rateLimitPerMinute`). */
  rateLimitPerMinute?: number | undefined;
  /** '/addClass' (spec) or '/teacher/addClass' (live). */
  addClassPath: string;
  editClassMethod: 'POST' | 'PUT';
  faults?: FaultConfig | undefined;
  /** Seeds ids, join tokens, random faults and jitter; random (and reported in the state) when absent. */
  seed?: number | undefined;
  /** Epoch milliseconds; injectable so listing-delay, read-lag and refused-key tests need not sleep. */
  clock?: (() => number) | undefined;
  /** What the latency, hang and lateEffect faults wait by (default: real timers); injectable likewise. */
  timers?: Pick<Clock, 'after'> | undefined;
}

export interface RunningSandbox {
  /** e.g. http://127.0.0.1:4010, no trailing slash. */
  url: string;
  port: number;
  store: SandboxStore;
  faults: FaultController;
  stats: CallStats;
  /** The same object `GET /__sandbox/state` returns. */
  state(options?: { classes?: boolean }): SandboxState;
  /**
   * Calls `listener` as each remote call arrives (before latency), with its parsed body and the class
   * it names; returns an unsubscribe function.
   */
  onRequest(listener: RequestListener): () => void;
  /** Empties store, counters and the rate-limit window; replays from `seed` (default: the current seed). */
  reset(seed?: number): void;
  /** Drops hung and delayed requests, then stops listening. Safe to call twice. */
  close(): Promise<void>;
}

/** The sandbox that accepts exactly what each configured account will send, each key for its own institutes. */
export function sandboxOptionsFromConfig(config: Config): SandboxOptions {
  const c = config.classroom;
  const primary = config.accounts.find((a) => a.instituteIds.includes(c.instituteId)) ?? config.accounts[0];
  const credentialsOf = (s: Config['classroom']): SandboxCredentials => ({
    userId: s.userId,
    apiKey: s.apiKey,
    xApiKey: s.xApiKey,
    userAgent: s.userAgent,
    namespace: s.namespace,
    namespaceHeader: s.namespaceHeader,
  });
  const others = config.accounts.filter((a) => a !== primary);
  return {
    credentials: credentialsOf(c),
    instituteIds: [...new Set([c.instituteId, ...(primary?.instituteIds ?? [])])],
    primaryAccount: primary?.name,
    ...(others.length > 0
      ? { accounts: others.map((a) => ({ name: a.name, credentials: credentialsOf(a.classroom), instituteIds: [...a.instituteIds] })) }
      : {}),
    addClassPath: c.addClassPath,
    editClassMethod: c.editClassMethod,
  };
}

/** Starts listening (port 0 = any free port) and resolves once the URL is known. */
export async function startSandbox(options: SandboxOptions, listen: { port?: number; host?: string } = {}): Promise<RunningSandbox> {
  if (options.instituteIds.length === 0) throw new Error('sandbox needs at least one institute id');
  let url = '';
  const { ctx, closing } = buildContext(options, () => url);
  const app = Fastify({ logger: false, forceCloseConnections: true, bodyLimit: 1_048_576 });
  installFallbacks(app, ctx.stats);
  registerRemoteRoutes(app, ctx);
  registerControlRoutes(app, ctx);

  const host = listen.host ?? '127.0.0.1';
  await app.listen({ port: listen.port ?? 0, host });
  const port = (app.server.address() as AddressInfo).port;
  url = `http://${urlHost(host)}:${port}`;

  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    store: ctx.store,
    faults: ctx.faults,
    stats: ctx.stats,
    state: (opts) => groundTruth(ctx, opts?.classes ?? true),
    onRequest(listener) {
      ctx.requestListeners.add(listener);
      return () => ctx.requestListeners.delete(listener);
    },
    reset: (seed) => ctx.reset(seed),
    close() {
      closed ??= (async () => {
        closing.abort();
        ctx.hangs.releaseAll();
        await app.close();
      })();
      return closed;
    },
  };
}

function buildContext(options: SandboxOptions, linkBase: () => string) {
  let seed = options.seed ?? freshSeed();
  const clock = options.clock ?? Date.now;
  const timers = options.timers ?? monotonicClock;
  const closing = new AbortController();
  // Every request in its latency sleep listens on this signal; hundreds at once are normal here.
  setMaxListeners(0, closing.signal);
  const keys = keyStates([
    {
      name: options.primaryAccount ?? 'default',
      credentials: options.credentials,
      instituteIds: options.instituteIds,
      rateLimitPerMinute: options.rateLimitPerMinute,
    },
    ...(options.accounts ?? []),
  ]);
  const instituteIds = [...new Set(keys.flatMap((key) => [...key.instituteIds]))];
  const store = createStore({ instituteIds, seed, clock, linkBase });
  const faults = createFaultController(options.faults ?? {}, seed, clock);
  const stats = createStats();
  const ctx: SandboxContext = {
    keys,
    defaultInstituteId: options.instituteIds[0] ?? '',
    addClassPath: options.addClassPath,
    editClassMethod: options.editClassMethod,
    store,
    faults,
    stats,
    hangs: createHangRegistry(timers),
    records: {
      namespace: options.credentials.namespace,
      teacher: { _id: randomHex(mulberry32(deriveSeed(seed, 4)), 24), name: 'Sandbox Teacher' },
    },
    clock,
    timers,
    requestListeners: new Set(),
    closing: closing.signal,
    seed: () => seed,
    reset(next) {
      seed = next ?? seed;
      store.reset(seed);
      faults.reseed(seed);
      stats.reset();
      for (const key of keys) key.limiter.reset();
    },
  };
  return { ctx, closing };
}

/** Errors and unknown routes answer in the service's own shape: `{ status, message }`. */
function installFallbacks(app: FastifyInstance, stats: CallStats): void {
  app.setErrorHandler((error: { statusCode?: number; message?: string }, _request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    stats.record('other', `http${status}`);
    return send(reply, failure(status, status === 500 ? 'Internal server error' : (error.message ?? 'Bad request')));
  });
  // A wrong add-class path or edit method lands here; the message says which route was missed.
  app.setNotFoundHandler((request, reply) => {
    stats.record('other', 'http404');
    const path = request.url.split('?')[0] ?? request.url;
    return send(reply, failure(404, `no route ${request.method} ${path}`));
  });
}

function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
