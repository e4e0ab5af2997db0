// Delivery in this thread: the dispatcher with a connection pool and HTTP connections of its own.
// A worker runs it on a thread of its own (./thread.ts); benchmarks and the thread itself call it here.
import { createDatabase } from '../db/client.ts';
import type { Logger } from '../logging/logger.ts';
import { type DeliveryOutcome, type Dispatcher, startDispatcher } from './dispatcher.ts';
import { createWebhookPoster } from './http.ts';
import { type RoutedAccount, endpointRouter, routedInstitutes } from './routing.ts';
import type { WebhookSettings } from './settings.ts';

export interface WebhookDeliveryDeps {
  databaseUrl: string;
  settings: WebhookSettings;
  accounts: readonly RoutedAccount[];
  logger: Logger;
  onOutcome?: (outcome: DeliveryOutcome, type: string) => void;
  pollMs?: number;
  /** Names this worker in webhook_routes (its id: a restarted thread keeps its row); default a random one. */
  dispatcherId?: string | undefined;
}

/** The dispatcher with its pool and HTTP connections: `close` lets go of them too. */
export type WebhookDelivery = Dispatcher;

export function startWebhookDelivery(deps: WebhookDeliveryDeps): WebhookDelivery {
  const { settings } = deps;
  const logger = deps.logger.child({ component: 'webhooks' });
  // Two connections: one claims while the other records; a slow outbox never waits on sync jobs.
  const database = createDatabase(deps.databaseUrl, { max: 2, applicationName: 'classroom-sync-webhooks' });
  const poster = createWebhookPoster({ timeoutMs: settings.timeoutMs, connections: settings.concurrency });
  const dispatcher = startDispatcher({
    db: database.db,
    logger,
    poster,
    settings,
    endpointFor: endpointRouter(deps.accounts, settings.endpoint),
    routed: routedInstitutes(deps.accounts, settings.endpoint),
    ...(deps.onOutcome ? { onOutcome: deps.onOutcome } : {}),
    ...(deps.pollMs === undefined ? {} : { pollMs: deps.pollMs }),
    dispatcherId: deps.dispatcherId,
  });
  logger.info({ concurrency: settings.concurrency, timeoutMs: settings.timeoutMs }, 'webhook delivery started');
  return {
    nudge: dispatcher.nudge,
    async close(graceMs) {
      await dispatcher.close(graceMs);
      await Promise.allSettled([poster.close(), database.close()]);
    },
  };
}
