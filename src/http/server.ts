// The operations surface on one port: batch API (/v1), queue dashboard (/admin/queues), Prometheus
// metrics (/metrics) and probes (/healthz, /readyz).
//
// Without API_TOKEN the process still syncs and still serves the probes and /metrics, but the API
// and dashboard answer 503 "API_TOKEN is not set": nothing that reads mappings or changes work is
// ever reachable without a credential, and nothing invents one.
import { type Remotes, breakersOf } from '../accounts/remotes.ts';
import type { Queue } from 'bullmq';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type LogLevel } from 'fastify';
import type { Database } from '../db/client.ts';
import type { PublishDeps } from '../intake/publish.ts';
import type { Logger } from '../logging/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Redis } from '../redis/connection.ts';
import type { Clock } from '../support/clock.ts';
import type { SyncQueue } from '../sync/queue.ts';
import type { DeliveryThreadState } from '../webhooks/index.ts';
import { createClientDirectory } from '../access/directory.ts';
import { type TrustProxy, clientsOf } from '../access/settings.ts';
import { type Gate, disabledWithoutClients, requireClient, requireDashboard } from './auth.ts';
import { createAuthThrottle } from './auth-throttle.ts';
import { registerBatchRoutes } from './batches.ts';
import { DASHBOARD_PATH, type Dashboard, registerDashboard } from './dashboard.ts';
import { createDashboardSession } from './dashboard-session.ts';
import { sessionSecret } from './session-secret.ts';
import { installErrorHandlers } from './errors.ts';
import { registerHealthRoutes } from './health.ts';
import { registerMetricsRoute } from './metrics-route.ts';
import type { HttpSettings } from './settings.ts';

/** 1,000 events with the largest allowed extra fields (8 KiB each) fit. */
export const DEFAULT_BODY_LIMIT = 10 * 1024 * 1024;

/** What the server uses: a Runtime has all of it but `metrics` and `publish`. */
export interface HttpServerDeps {
  /** The server's settings (src/http/settings.ts), built once from the configuration. */
  httpSettings: HttpSettings;
  logger: Logger;
  /** Probed by /readyz; holds the sign-in throttle's counts and the fleet's session secret; read by /metrics. */
  redis: Redis;
  /** /readyz queries its pool; the dashboard's retries write through `db`. */
  database: Pick<Database, 'db' | 'pool'>;
  /** The sync queue (its background queue beside it) on the dashboard and in the gauges. */
  queue: SyncQueue;
  /** Each account's credentials breaker, for /readyz and /metrics. */
  remotes: Pick<Remotes, 'all'>;
  metrics: Metrics;
  /** What POST /v1/batches records and enqueues with (publishDepsOf in src/runtime builds it). */
  publish: PublishDeps;
  /** The state of this process's webhook delivery thread, for /readyz (undefined: it runs none yet). */
  webhooks?: (() => DeliveryThreadState | undefined) | undefined;
}

export interface HttpServerOptions {
  /** More queues for the dashboard and the queue gauges (e.g. the reconciliation queue). */
  extraQueues?: readonly Queue[];
  /** Require the API token on /metrics as well (default false: most scrapers send none). */
  metricsAuth?: boolean;
  bodyLimitBytes?: number;
  /** Per dependency, for /readyz and the scrape-time gauges. */
  probeTimeoutMs?: number;
  /**
   * One clock for all the server times (a test's): the pacing of /metrics, the sign-in throttle, the
   * dashboard's sessions. Unset, each uses its real one (src/support/clock.ts).
   */
  clock?: Clock;
}

export interface HttpServer {
  app: FastifyInstance;
  /** Starts listening (port 0 = any free port) and resolves with the base URL. */
  listen(options?: { port?: number; host?: string }): Promise<string>;
  /** Shows a queue created after the server (e.g. the reconciliation's) on the dashboard and in the gauges. */
  addQueue(queue: Queue): void;
  /** Stops accepting connections, lets in-flight requests finish, then closes. Safe to call twice. */
  close(): Promise<void>;
}

export async function createHttpServer(deps: HttpServerDeps, options: HttpServerOptions = {}): Promise<HttpServer> {
  const { httpSettings: settings } = deps;
  const directory = createClientDirectory(clientsOf(settings.http));
  // Shared with the /metrics route and the dashboard: addQueue() appends to it after start.
  // The background queue (operator work, backfill) is shown beside the sync queue.
  const extraQueues: Queue[] = [deps.queue.background, ...(options.extraQueues ?? [])];
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;
  const probeTimeoutMs = options.probeTimeoutMs ?? 1_500;
  if (options.metricsAuth && directory.size === 0) throw new Error('metrics authentication needs API_TOKEN or API_CLIENTS_FILE to be set');

  const logger = deps.logger.child({ component: 'http' });
  const quietLevel = quietLevelOf(logger);
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // Small by default; POST /v1/batches raises it for itself.
    bodyLimit: 64 * 1024,
    // Idle keep-alive sockets are closed on close(), so shutdown never waits on a browser tab.
    forceCloseConnections: 'idle',
    // TRUST_PROXY: whose X-Forwarded-For and X-Forwarded-Proto to believe (the throttle counts by
    // address; the session cookie is Secure when the original request was https).
    trustProxy: fastifyTrustProxy(settings.http.trustProxy),
    // Intake accepts 200-character batch ids; URL-encoded, each character may take up to 12.
    routerOptions: { maxParamLength: 2_400 },
  });
  installErrorHandlers(app, { bodyLimitBytes });
  // Declared up front (Fastify keeps one request shape); the authentication hooks set it.
  app.decorateRequest('apiClient', null);
  registerHealthRoutes(app, {
    redis: deps.redis,
    database: deps.database,
    breakers: breakersOf(deps.remotes),
    timeoutMs: probeTimeoutMs,
    logLevel: quietLevel,
    webhooks: deps.webhooks,
  });
  const gate: Gate = { directory, throttle: createAuthThrottle(deps.redis, settings.queuePrefix, options.clock) };
  const metricsGuard = options.metricsAuth ? { onRequest: requireDashboard(gate, 'scrape /metrics') } : {};
  registerMetricsRoute(app, { ...deps, extraQueues, probeTimeoutMs, logLevel: quietLevel, ...metricsGuard, clock: options.clock });
  let dashboard: Dashboard | undefined;
  if (directory.size > 0) {
    dashboard = await registerOperatorRoutes(app, { ...deps, gate, extraQueues, bodyLimitBytes, clock: options.clock });
  } else {
    deps.logger.warn('neither API_TOKEN nor API_CLIENTS_FILE is set: serving only /healthz, /readyz and /metrics; the batch API and dashboard answer 503');
    for (const url of ['/v1/*', DASHBOARD_PATH, `${DASHBOARD_PATH}/*`]) app.all(url, disabledWithoutClients);
  }
  return serverHandle(app, settings.http, extraQueues, dashboard);
}

/** Fastify's types leave out a hop count, which it takes as "the nearest N proxies": so spelled. */
function fastifyTrustProxy(trust: TrustProxy): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust;
}

/**
 * Probes and scrapes come every few seconds: their request lines only at warn, but a route
 * level replaces the logger's, so never pick one chattier than the configured level.
 */
function quietLevelOf(logger: Logger): LogLevel {
  const warn = logger.levels.values.warn;
  if (warn === undefined) throw new Error('the HTTP server needs a logger with a "warn" level (pino\'s standard levels): it logs probes and scrapes at warn');
  return logger.levelVal >= warn ? (logger.level as LogLevel) : 'warn';
}

interface OperatorRouteDeps extends Pick<HttpServerDeps, 'httpSettings' | 'database' | 'queue' | 'publish' | 'redis'> {
  gate: Gate;
  extraQueues: readonly Queue[];
  bodyLimitBytes: number;
  /** Times the dashboard's sessions (default: the system clock). */
  clock: Clock | undefined;
}

/** The batch API under /v1 (a client's bearer token) and the dashboard (a token or its session cookie); resolves with the dashboard. */
async function registerOperatorRoutes(app: FastifyInstance, deps: OperatorRouteDeps): Promise<Dashboard> {
  await app.register(async (api) => {
    api.addHook('onRequest', requireClient(deps.gate));
    // Events are JSON; a text body is a client mistake worth a 415, not a "must be an object".
    api.removeContentTypeParser('text/plain');
    registerBatchRoutes(api, {
      publish: deps.publish,
      defaultInstituteId: deps.httpSettings.defaultInstituteId,
      bodyLimitBytes: deps.bodyLimitBytes,
    });
  });
  const secret = sessionSecret({ configured: deps.httpSettings.http.sessionSecret, redis: deps.redis, prefix: deps.httpSettings.queuePrefix });
  const session = createDashboardSession(deps.gate.directory, secret, deps.clock);
  return registerDashboard(app, {
    db: deps.database.db,
    syncQueue: deps.queue,
    extraQueues: deps.extraQueues,
    authenticate: requireDashboard({ ...deps.gate, session }),
    session,
  });
}

/** The handle the worker holds: listen on the configured address, show later queues, close once. */
function serverHandle(app: FastifyInstance, http: { port: number; host: string }, extraQueues: Queue[], dashboard: Dashboard | undefined): HttpServer {
  let closing: Promise<void> | undefined;
  return {
    app,
    async listen({ port = http.port, host = http.host } = {}) {
      await app.listen({ port, host });
      const address = app.server.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
      return `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${bound}`;
    },
    addQueue(queue) {
      extraQueues.push(queue);
      dashboard?.addQueue(queue);
    },
    close() {
      closing ??= app.close();
      return closing;
    },
  };
}
