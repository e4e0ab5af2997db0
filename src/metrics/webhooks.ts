import { Counter, Gauge, type Registry } from 'prom-client';
import type { DeliveryOutcome, DeliveryThreadState } from '../webhooks/index.ts';

export interface WebhookMetrics {
  /** Pass as `startWebhookThread({ onOutcome })`: how each webhook attempt ended. */
  recordWebhook(outcome: DeliveryOutcome): void;
  /** Pass as `startWebhookThread(deps, { onState })`: the delivery thread's state, at each change. */
  recordWebhookThread(state: DeliveryThreadState): void;
}

/**
 * Webhook attempts by outcome (the outbox's pending count and age are read at scrape time), and this
 * process's delivery thread: running or not, and how often it was started again.
 */
export function webhookMetrics(registers: Registry[]): WebhookMetrics {
  const deliveries = new Counter({
    name: 'classroom_sync_webhook_deliveries_total',
    help: 'Webhook attempts by outcome: delivered (2xx), retry (no answer, 408, 429, 3xx or 5xx; tried again later), given_up (another 4xx, or retried for WEBHOOK_RETRY_FOR), skipped (no worker has an endpoint for its institute).',
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of ['delivered', 'retry', 'given_up', 'skipped'] as const) deliveries.labels({ outcome }).inc(0);
  // Absent until a delivery thread reports (a process that runs none exports no such series).
  const up = new Gauge({
    name: 'classroom_sync_webhook_delivery_up',
    help: "1 while this process's webhook delivery thread runs; 0 while it starts, or after it stopped until a new one runs (it is started again after 1 s, doubling to 30 s).",
    registers,
  });
  up.remove();
  const restarts = new Counter({
    name: 'classroom_sync_webhook_delivery_restarts_total',
    help: "Times this process's webhook delivery thread was started again after it stopped unasked (an uncaught error, terminated).",
    registers,
  });
  let restartsSeen = 0;
  return {
    recordWebhook: (outcome) => deliveries.labels({ outcome }).inc(),
    recordWebhookThread(state) {
      up.set(state.status === 'running' ? 1 : 0);
      if (state.restarts > restartsSeen) restarts.inc(state.restarts - restartsSeen);
      restartsSeen = state.restarts;
    },
  };
}
