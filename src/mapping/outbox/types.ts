// The webhook outbox as the rest of the code sees it (the table is src/db/schema/webhook-messages.ts).
export { WEBHOOK_STATUSES, type WebhookStatus } from '../../db/schema/index.ts';
import type { WebhookStatus } from '../../db/schema/index.ts';

/** A message a dispatcher claimed: what it needs to send it once. */
export interface ClaimedMessage {
  id: number;
  messageId: string;
  instituteId: string;
  batchId: string;
  type: string;
  occurredAt: Date;
  /** The body's `data` (it may hold a join link: never log it). */
  data: Record<string, unknown>;
  /** This attempt's number since the message was written or redelivered (1 for the first). */
  attempt: number;
}

/** How one attempt ended, as the outbox records it. */
export type AttemptRecord =
  | { outcome: 'delivered'; status: number }
  | { outcome: 'retry'; status: number | null; error: string; delayMs: number; retryForMs: number }
  | { outcome: 'given_up'; status: number | null; error: string }
  | { outcome: 'skipped'; error: string };

/** One message as operators see it (never its data: a join link is a secret). */
export interface DeliveryView {
  messageId: string;
  type: string;
  instituteId: string;
  batchId: string;
  status: WebhookStatus;
  attempts: number;
  occurredAt: Date;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  /** When the next attempt is due (pending messages only). */
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
}
