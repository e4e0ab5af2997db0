// Webhooks: the integrator hears of every settled batch by a signed Standard Webhooks message. The
// outbox rows are written by PostgreSQL itself beside each state change (migrations/0007); this module
// delivers them, on a connection pool and HTTP connections of its own.
import { createDatabase } from '../db/client.ts';
import type { Logger } from '../logger.ts';
import { type DeliveryOutcome, type Dispatcher, startDispatcher } from './dispatcher.ts';
import { createWebhookPoster } from './http.ts';
import { type RoutedAccount, endpointRouter, routedInstitutes } from './routing.ts';
import type { WebhookSettings } from './settings.ts';

export type { DeliveryOutcome, Dispatcher } from './dispatcher.ts';
export { type RoutedAccount, endpointRouter, routedInstitutes } from './routing.ts';
export { DEFAULT_RETRY_SCHEDULE_MS, type WebhookEndpoint, type WebhookSettings, webhookFields } from './settings.ts';
export { signMessage } from './sign.ts';

export interface WebhookDeliveryDeps {
  databaseUrl: string;
  settings: WebhookSettings;
  accounts: readonly RoutedAccount[];
  logger: Logger;
  onOutcome?: (outcome: DeliveryOutcome, type: string) => void;
  pollMs?: number;
}

export interface WebhookDelivery extends Dispatcher {
  close(graceMs: number): Promise<void>;
}

export function startWebhookDelivery(deps: WebhookDeliveryDeps): WebhookDelivery {
  const { settings } = deps;
  // Two connections: one claims while the other records; a slow outbox never waits on sync jobs.
  const database = createDatabase(deps.databaseUrl, { max: 2, applicationName: 'classroom-sync-webhooks' });
  const poster = createWebhookPoster({ timeoutMs: settings.timeoutMs, connections: settings.concurrency });
  const dispatcher = startDispatcher({
    db: database.db,
    logger: deps.logger.child({ component: 'webhooks' }),
    poster,
    settings,
    endpointFor: endpointRouter(deps.accounts, settings.endpoint),
    routed: routedInstitutes(deps.accounts, settings.endpoint),
    ...(deps.onOutcome ? { onOutcome: deps.onOutcome } : {}),
    ...(deps.pollMs === undefined ? {} : { pollMs: deps.pollMs }),
  });
  return {
    nudge: dispatcher.nudge,
    async close(graceMs) {
      await dispatcher.close(graceMs);
      await Promise.allSettled([poster.close(), database.close()]);
    },
  };
}
