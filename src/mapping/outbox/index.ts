// The webhook outbox (webhook_messages): its rows are written by a trigger beside every state change
// the integrator hears about (migrations/0007); these are its readers and its dispatcher's writes.
// webhook_routes says which dispatchers run and what each can send (migrations/0011).
export * from './types.ts';
export { claimDueMessages, releaseClaims } from './claim.ts';
export { type AttemptEntry, recordAttempts, skipUnrouted } from './record.ts';
export { announceRoutes, withdrawRoutes } from './routes.ts';
export { type DeliveryFilter, listDeliveries, messagesOfBatch } from './list.ts';
export { hurryPending, knownMessageIds, redeliverMessages } from './redeliver.ts';
export { type OutboxStats, outboxStats, pruneMessages } from './stats.ts';
