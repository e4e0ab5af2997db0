// The webhook outbox (webhook_messages): its rows are written by a trigger beside every state change
// the integrator hears about (migrations/0007); these are its readers and its dispatcher's writes.
// webhook_routes says which dispatchers run and what each can send (migrations/0011).
export * from './types.ts';
export { announceRoutes } from './announce-routes.ts';
export { claimDueMessages } from './claim-due-messages.ts';
export { hurryPending } from './hurry-pending.ts';
export { knownMessageIds } from './known-message-ids.ts';
export { type DeliveryFilter, listDeliveries } from './list-deliveries.ts';
export { messagesOfBatch } from './messages-of-batch.ts';
export { type OutboxStats, outboxStats } from './outbox-stats.ts';
export { pruneMessages } from './prune-messages.ts';
export { type AttemptEntry, recordAttempts } from './record-attempts.ts';
export { redeliverMessages } from './redeliver-messages.ts';
export { releaseClaims } from './release-claims.ts';
export { skipUnrouted } from './skip-unrouted.ts';
export { withdrawRoutes } from './withdraw-routes.ts';
