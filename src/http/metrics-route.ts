// GET /metrics: the scrape-time gauges, refreshed, then Prometheus' text format.
import type { Queue } from 'bullmq';
import type { FastifyInstance, LogLevel, onRequestHookHandler } from 'fastify';
import { type Remotes, breakersOf } from '../accounts/remotes.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { createScrapeGuard } from '../metrics/scrape-guard.ts';
import type { Redis } from '../redis/connection.ts';
import type { Clock } from '../support/clock.ts';
import type { SyncQueue } from '../sync/queue.ts';
import type { HttpSettings } from './settings.ts';

export interface MetricsRouteDeps {
  /** `databaseUrl`: the scrape's own connection; `accounts`: batches by account with several. */
  httpSettings: Pick<HttpSettings, 'databaseUrl' | 'accounts'>;
  /** The queues' connection. */
  redis: Redis;
  queue: SyncQueue;
  /** Each account's credentials breaker. */
  remotes: Pick<Remotes, 'all'>;
  metrics: Metrics;
  extraQueues: readonly Queue[];
  probeTimeoutMs: number;
  logLevel: LogLevel;
  /** With --metrics-auth: the operator check. */
  onRequest?: onRequestHookHandler;
  /** Paces the scrapes (default: the monotonic clock). */
  clock?: Clock | undefined;
}

/**
 * GET /metrics: refreshes the scrape-time gauges, then answers in Prometheus' text format. However
 * many scrapes arrive, they share answers and the database is read on a connection of the route's
 * own, at most once per SCRAPE_REUSE_MS (scrape-guard.ts); the connection closes with the server.
 */
export function registerMetricsRoute(app: FastifyInstance, deps: MetricsRouteDeps): void {
  const { httpSettings: settings, metrics, onRequest } = deps;
  const scrape = createScrapeGuard({
    refresh: (sources, only) => metrics.refresh(sources, only),
    render: () => metrics.registry.metrics(),
    databaseUrl: settings.databaseUrl,
    sources: () => ({
      redis: deps.redis,
      queues: [deps.queue, ...deps.extraQueues],
      breakers: breakersOf(deps.remotes),
      accounts: settings.accounts,
    }),
    timeoutMs: deps.probeTimeoutMs,
    ...(deps.clock ? { clock: deps.clock } : {}),
  });
  app.addHook('onClose', () => scrape.close());
  app.get('/metrics', { logLevel: deps.logLevel, ...(onRequest ? { onRequest } : {}) }, async (_request, reply) => {
    const body = await scrape.answer();
    return reply.type(metrics.registry.contentType).send(body);
  });
}
