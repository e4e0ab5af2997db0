// The webhook outbox: one row per message the integrator should hear about. Rows are written by a
// trigger on batch_classes (migrations/0007) in the same transaction as the state change that causes
// them, whichever code made the change; a dispatcher delivers them (src/webhooks). Nothing here is
// kept in Redis, so a crash or a Redis wipe loses no message.
import { sql } from 'drizzle-orm';
import { bigint, bigserial, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { batchClasses } from './batch-classes.ts';

/**
 * pending    to be delivered (now, or at `next_attempt_at`)
 * delivered  the endpoint answered 2xx
 * failed     given up: a 4xx other than 408/429, or retried for WEBHOOK_RETRY_FOR (`redeliver` sends it again)
 * skipped    no worker of the fleet had an endpoint for its institute when it came due (webhook-routes.ts)
 */
export const WEBHOOK_STATUSES = ['pending', 'delivered', 'failed', 'skipped'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const webhookMessages = pgTable(
  'webhook_messages',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** The Standard Webhooks message id (`webhook-id`): one per event, the same on every retry. */
    messageId: text('message_id').notNull(),
    batchRowId: bigint('batch_row_id', { mode: 'number' })
      .notNull()
      .references(() => batchClasses.id, { onDelete: 'cascade' }),
    instituteId: text('institute_id').notNull(),
    batchId: text('batch_id').notNull(),
    /** `batch.synced`, `batch.updated`, `batch.cancelled`, `batch.failed`, `batch.needs_review`, `batch.abandoned`, `batch.abandon_undone`. */
    type: text('type').notNull(),
    /** When the event happened: the body's `timestamp`. */
    occurredAt: ts('occurred_at').notNull().defaultNow(),
    /** The body's `data`, frozen when the event happened (a join link: never logged). */
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    status: text('status').$type<WebhookStatus>().notNull().default('pending'),
    /** Attempts since it was written or last redelivered. */
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull().defaultNow(),
    /** Retries stop WEBHOOK_RETRY_FOR after this (its writing, or an operator's `redeliver`). */
    retryFrom: ts('retry_from').notNull().defaultNow(),
    /** A dispatcher holds the message until then; a dispatcher that died lets go of it by itself. */
    lockedUntil: ts('locked_until'),
    lastAttemptAt: ts('last_attempt_at'),
    /** The last answer's HTTP status (null: none, see last_error). */
    lastStatus: integer('last_status'),
    /** Why the last attempt failed: a timeout, a connection error, or the status's meaning. */
    lastError: text('last_error'),
    deliveredAt: ts('delivered_at'),
  },
  (t) => [
    uniqueIndex('webhook_messages_message_id_key').on(t.messageId),
    index('webhook_messages_due_idx').on(t.nextAttemptAt, t.id).where(sql`${t.status} = 'pending'`),
    index('webhook_messages_batch_idx').on(t.batchRowId, t.id),
    // Each batch's oldest pending message: the one a claim may take (one batch's messages go in order).
    index('webhook_messages_pending_batch_idx').on(t.batchRowId, t.id).where(sql`${t.status} = 'pending'`),
    index('webhook_messages_status_idx').on(t.status, t.id),
    // The metrics' oldest pending message: the index's first entry.
    index('webhook_messages_pending_age_idx').on(t.occurredAt).where(sql`${t.status} = 'pending'`),
    // Finished messages (delivered, given up, skipped) by age: what pruning deletes, oldest first, without reading the pending ones.
    index('webhook_messages_settled_idx').on(t.occurredAt).where(sql`${t.status} <> 'pending'`),
  ],
);

export type WebhookMessageRow = typeof webhookMessages.$inferSelect;
