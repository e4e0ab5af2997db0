// Webhook dispatchers as a fleet's workers run them, for tests of what the fleet sends and skips:
// each with an endpoint for some institutes only, known to the others by its row of webhook_routes.
import { createLogger } from '../../src/logging/logger.ts';
import { type WebhookDelivery, startWebhookDelivery } from '../../src/webhooks/index.ts';
import type { Harness } from './harness.ts';
import { type Receiver, newSecret } from './webhook-receiver.ts';

const silent = createLogger({ level: 'silent' });

export interface TestDispatcher {
  /** The institutes it has an endpoint for (none: it can send nothing). */
  institutes: string[];
  /** Where those institutes' messages go. */
  receiver?: Receiver;
  pollMs: number;
  /** Its name in webhook_routes. */
  id: string;
}

/** Starts a dispatcher on the harness's database; `defer` closes it at teardown. */
export function startTestDispatcher(h: Harness, defer: (close: () => unknown) => void, options: TestDispatcher): WebhookDelivery {
  const webhook = options.receiver ? { url: options.receiver.url, secrets: [newSecret()] } : undefined;
  const delivery = startWebhookDelivery({
    databaseUrl: h.config.databaseUrl,
    settings: { ...h.config.webhooks, endpoint: undefined },
    accounts: options.institutes.map((id) => ({ instituteIds: [id], webhook })),
    logger: silent,
    pollMs: options.pollMs,
    dispatcherId: options.id,
  });
  defer(() => delivery.close(0));
  return delivery;
}

/** A waitFor condition: dispatcher `id` has announced its routes to the fleet. */
export const routeSeen = (h: Harness, id: string) => async () =>
  (await h.runtime.database.pool.query('select 1 from webhook_routes where dispatcher_id = $1', [id])).rowCount === 1 || undefined;
