// Which webhook dispatchers run, fleet-wide, and which institutes' messages each can send. A
// dispatcher with an endpoint writes its row when it starts and every few seconds (seen_at), and
// deletes it when it closes. A message is recorded `skipped` for want of an endpoint only when no
// dispatcher seen lately can send it, in the same statement that reads this table
// (src/mapping/outbox/announce-routes.ts): during a rolling deploy that turns webhooks on, a worker that has
// no endpoint yet leaves the messages to one that has.
import { text, timestamp, pgTable } from 'drizzle-orm/pg-core';

export const webhookRoutes = pgTable('webhook_routes', {
  /** One per dispatcher: the worker's id (its thread's restarts keep it). */
  dispatcherId: text('dispatcher_id').primaryKey(),
  /** The institutes it has an endpoint for; null: every institute (WEBHOOK_URL is set). */
  instituteIds: text('institute_ids').array(),
  /** When it last said it runs (PostgreSQL's clock). */
  seenAt: timestamp('seen_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});
