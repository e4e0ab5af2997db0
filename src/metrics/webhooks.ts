import { Counter, type Registry } from 'prom-client';
import type { DeliveryOutcome } from '../webhooks/index.ts';

/** Webhook attempts by outcome (the outbox's pending count and age are read at scrape time). */
export function webhookMetrics(registers: Registry[]): (outcome: DeliveryOutcome) => void {
  const deliveries = new Counter({
    name: 'classroom_sync_webhook_deliveries_total',
    help: 'Webhook attempts by outcome: delivered (2xx), retry (no answer, 408, 429, 3xx or 5xx; tried again later), given_up (another 4xx, or retried for WEBHOOK_RETRY_FOR), skipped (no endpoint for its institute).',
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of ['delivered', 'retry', 'given_up', 'skipped'] as const) deliveries.labels({ outcome }).inc(0);
  return (outcome) => deliveries.labels({ outcome }).inc();
}
