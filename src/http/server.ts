// The operations surface on one port: batch API (/v1), queue dashboard (/admin/queues), Prometheus
// metrics (/metrics) and probes (/healthz, /readyz).
//
// Without API_TOKEN the process still syncs and still serves the probes and /metrics, but the API
// and dashboard answer 503 "API_TOKEN is not set": nothing that reads mappings or changes work is
// ever reachable without a credential, and nothing invents one.
import type { Queue } from 'bullmq';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type LogLevel } from 'fastify';
import type { Metrics } from '../metrics/metrics.ts';
import type { Runtime } from '../runtime.ts';
import { createTokenCheck, disabledWithoutToken, requireBearer, requireOperator } from './auth.ts';
import { registerBatchRoutes } from './batches.ts';
import { DASHBOARD_PATH, type Dashboard, registerDashboard } from './dashboard.ts';
import { installErrorHandlers } from './errors.ts';
import { registerHealthRoutes } from './health.ts';

/** 1,000 events with the largest allowed extra fields (8 KiB each) fit. */
export const DEFAULT_BODY_LIMIT = 10 * 1024 * 1024;

export interface HttpServerOptions {
  runtime: Runtime;
  metrics: Metrics;
  /** More queues for the dashboard and the queue gauges (e.g. the reconciliation queue). */
  extraQueues?: readonly Queue[];
  /** Require the API token on /metrics as well (default false: most scrapers send none). */
  metricsAuth?: boolean;
  bodyLimitBytes?: number;
  /** Per dependency, for /readyz and the scrape-time gauges. */
  probeTimeoutMs?: number;
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

export async function createHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const { runtime, metrics } = options;
  const { config } = runtime;
  const token = config.http.apiToken;
  const extraQueues = [...(options.extraQueues ?? [])];
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;
  const probeTimeoutMs = options.probeTimeoutMs ?? 1_500;
  if (options.metricsAuth && !token) throw new Error('metrics authentication needs API_TOKEN to be set');

  const logger = runtime.logger.child({ component: 'http' });
  // Probes and scrapes come every few seconds: their request lines only at warn, but a route
  // level replaces the logger's, so never pick one chattier than the configured level.
  const quietLevel: LogLevel = logger.levelVal >= logger.levels.values.warn! ? (logger.level as LogLevel) : 'warn';
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // Small by default; POST /v1/batches raises it for itself.
    bodyLimit: 64 * 1024,
    // Idle keep-alive sockets are closed on close(), so shutdown never waits on a browser tab.
    forceCloseConnections: 'idle',
  });
  installErrorHandlers(app, { bodyLimitBytes });
  registerHealthRoutes(app, { redis: runtime.redis, database: runtime.database, timeoutMs: probeTimeoutMs, logLevel: quietLevel });

  const check = token ? createTokenCheck(token) : undefined;
  let dashboard: Dashboard | undefined;
  app.get('/metrics', { logLevel: quietLevel, ...(options.metricsAuth && check ? { onRequest: requireOperator(check) } : {}) }, async (_request, reply) => {
    await metrics.refresh({ db: runtime.database.db, redis: runtime.redis, queues: [runtime.queue, ...extraQueues], timeoutMs: probeTimeoutMs });
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  if (check) {
    await app.register(async (api) => {
      api.addHook('onRequest', requireBearer(check));
      // Events are JSON; a text body is a client mistake worth a 415, not a "must be an object".
      api.removeContentTypeParser('text/plain');
      registerBatchRoutes(api, {
        publish: {
          db: runtime.database.db,
          queue: runtime.queue,
          logger: runtime.logger,
          defaults: { instituteId: config.classroom.instituteId, classNameTemplate: config.classroom.classNameTemplate },
        },
        defaultInstituteId: config.classroom.instituteId,
        bodyLimitBytes,
      });
    });
    dashboard = await registerDashboard(app, { db: runtime.database.db, syncQueue: runtime.queue, extraQueues, authenticate: requireOperator(check) });
  } else {
    runtime.logger.warn('API_TOKEN is not set: serving only /healthz, /readyz and /metrics; the batch API and dashboard answer 503');
    for (const url of ['/v1/*', DASHBOARD_PATH, `${DASHBOARD_PATH}/*`]) app.all(url, disabledWithoutToken);
  }

  let closing: Promise<void> | undefined;
  return {
    app,
    async listen({ port = config.http.port, host = config.http.host } = {}) {
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
