// One attempt at one message: sign it, post it, and record what the answer means.
import type { Db } from '../db/client.ts';
import type { Logger } from '../logging/logger.ts';
import type { outbox } from '../mapping/index.ts';
import { packageVersion } from '../support/version.ts';
import type { WebhookPoster } from './http.ts';
import { verdictOf } from './outcome.ts';
import { type RecordAttempt, createAttemptRecorder } from './recorder.ts';
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

/**
 * One attempt in two parts: `sent` resolves when the endpoint has answered (or not: a timeout, a
 * refused connection), which frees its delivery slot; `done` when the answer is recorded. Answers
 * are recorded together (./recorder.ts), so a slot never waits for a statement.
 */
export interface Attempt {
  sent: Promise<unknown>;
  done: Promise<void>;
}

/**
 * One attempt at `message`, or undefined when this dispatcher has no endpoint for its institute: it
 * claims only institutes it has one for (dispatcher.ts), so that would be a routing bug, and the
 * message is let go for a dispatcher that can send it rather than recorded skipped.
 */
export function createDeliver(deps: DeliverDeps): (message: outbox.ClaimedMessage) => Attempt | undefined {
  const { settings } = deps;
  const userAgent = `classroom-sync/${packageVersion()} (webhooks)`;
  const recordAttempt: RecordAttempt = createAttemptRecorder(deps.db, { batch: settings.concurrency });
  return (message) => {
    const endpoint = deps.endpointFor(message.instituteId);
    if (!endpoint) return undefined;
    const body = JSON.stringify({ type: message.type, timestamp: message.occurredAt.toISOString(), data: message.data });
    const headers = { ...signMessage(endpoint.secrets, message.messageId, body), 'content-type': 'application/json', 'user-agent': userAgent };
    const sent = deps.poster.post(endpoint.url, body, headers);
    const done = sent.then(async (answer) => {
      const verdict = verdictOf(answer, message.attempt, settings);
      reportOutcome(deps, message, verdict, await recordAttempt(message, verdict));
    });
    return { sent, done };
  };
}

/** Counts what an attempt came to, and says so when it gave the message up. */
function reportOutcome(deps: DeliverDeps, message: outbox.ClaimedMessage, verdict: outbox.AttemptRecord, status: outbox.WebhookStatus | undefined): void {
  if (status === undefined) return; // no longer this attempt's: another dispatcher took it since
  const outcome: DeliveryOutcome = verdict.outcome === 'retry' && status === 'failed' ? 'given_up' : verdict.outcome;
  deps.onOutcome?.(outcome, message.type);
  if (outcome !== 'given_up') return;
  const { messageId, type, instituteId, batchId, attempt } = message;
  deps.logger.warn(
    { messageId, type, instituteId, batchId, attempts: attempt, error: 'error' in verdict ? verdict.error : undefined },
    'webhook message given up; `classroom-sync redeliver` sends it again',
  );
}
