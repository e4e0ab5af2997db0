// One attempt at one message: sign it, post it, and record what the answer means.
import type { Db } from '../db/client.ts';
import type { Logger } from '../logger.ts';
import { outbox } from '../mapping/index.ts';
import { packageVersion } from '../version.ts';
import type { WebhookPoster } from './http.ts';
import { verdictOf } from './outcome.ts';
import type { WebhookEndpoint, WebhookSettings } from './settings.ts';
import { signMessage } from './sign.ts';

/** How a message's attempt ended, for metrics (a retry past WEBHOOK_RETRY_FOR is given_up). */
export type DeliveryOutcome = 'delivered' | 'retry' | 'given_up' | 'skipped';

export interface DeliverDeps {
  /** A pool of its own (see src/webhooks/index.ts): never the sync jobs'. */
  db: Db;
  logger: Logger;
  poster: WebhookPoster;
  settings: WebhookSettings;
  /** The endpoint serving an institute's messages, if any. */
  endpointFor: (instituteId: string) => WebhookEndpoint | undefined;
  onOutcome?: (outcome: DeliveryOutcome, type: string) => void;
}

export function createDeliver(deps: DeliverDeps): (message: outbox.ClaimedMessage) => Promise<void> {
  const { settings, logger } = deps;
  const userAgent = `classroom-sync/${packageVersion()} (webhooks)`;
  return async (message: outbox.ClaimedMessage): Promise<void> => {
    const endpoint = deps.endpointFor(message.instituteId);
    if (!endpoint) {
      await outbox.recordAttempt(deps.db, message, { outcome: 'skipped', error: `no webhook endpoint is configured for institute ${message.instituteId}` });
      deps.onOutcome?.('skipped', message.type);
      return;
    }
    const body = JSON.stringify({ type: message.type, timestamp: message.occurredAt.toISOString(), data: message.data });
    const headers = { ...signMessage(endpoint.secrets, message.messageId, body), 'content-type': 'application/json', 'user-agent': userAgent };
    const verdict = verdictOf(await deps.poster.post(endpoint.url, body, headers), message.attempt, settings);
    const status = await outbox.recordAttempt(deps.db, message, verdict);
    if (status === undefined) return;
    const outcome: DeliveryOutcome = verdict.outcome === 'retry' && status === 'failed' ? 'given_up' : verdict.outcome;
    deps.onOutcome?.(outcome, message.type);
    if (outcome === 'given_up') {
      const { messageId, type, instituteId, batchId, attempt } = message;
      logger.warn(
        { messageId, type, instituteId, batchId, attempts: attempt, error: 'error' in verdict ? verdict.error : undefined },
        'webhook message given up; `classroom-sync redeliver` sends it again',
      );
    }
  };
}
