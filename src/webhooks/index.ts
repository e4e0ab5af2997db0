// Webhooks: the integrator hears of every batch that comes to rest by a signed Standard Webhooks message. The
// outbox rows are written by PostgreSQL itself beside each state change (migrations/0007); this module
// delivers them, on a thread, a connection pool and HTTP connections of its own.
export type { DeliveryOutcome, Dispatcher } from './dispatcher.ts';
export { type WebhookDelivery, type WebhookDeliveryDeps, startWebhookDelivery } from './delivery.ts';
export { type RoutedAccount, endpointRouter, routedInstitutes } from './routing.ts';
export { DEFAULT_RETRY_SCHEDULE_MS, type WebhookEndpoint, type WebhookSettings, webhookFields } from './settings.ts';
export { signMessage } from './sign.ts';
export {
  DELIVERY_NICE,
  type DeliveryThreadState,
  type DeliveryThreadStatus,
  type WebhookThread,
  type WebhookThreadOptions,
  restartDelayMs,
  startWebhookThread,
} from './thread.ts';
