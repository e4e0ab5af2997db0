// GET /metrics: the scrape-time gauges, refreshed, then Prometheus' text format.
import type { Queue } from 'bullmq';
import type { FastifyInstance, LogLevel, onRequestHookHandler } from 'fastify';
import { breakersOf } from '../accounts/remotes.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Runtime } from '../runtime.ts';

export interface MetricsRouteDeps {
  runtime: Runtime;
  metrics: Metrics;
  extraQueues: readonly Queue[];
  probeTimeoutMs: number;
  logLevel: LogLevel;
  /** With --metrics-auth: the operator check. */
  onRequest?: onRequestHookHandler;
}

/** GET /metrics: refreshes the scrape-time gauges, then answers in Prometheus' text format. */
export function registerMetricsRoute(app: FastifyInstance, deps: MetricsRouteDeps): void {
  const { runtime, metrics, onRequest } = deps;
  app.get('/metrics', { logLevel: deps.logLevel, ...(onRequest ? { onRequest } : {}) }, async (_request, reply) => {
    await metrics.refresh({
      db: runtime.database.db,
      redis: runtime.redis,
      queues: [runtime.queue, ...deps.extraQueues],
      breakers: breakersOf(runtime.remotes),
      accounts: runtime.config.accounts,
      timeoutMs: deps.probeTimeoutMs,
    });
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
