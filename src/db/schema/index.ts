// Glossary (the one list of the domain's words; src/reconcile/types.ts adds a pass's own)
//   batch       a group of students in the integrator's own system, named by its batchId
//   class       the remote service's counterpart of a batch (also "room"); one per batch, never two
//   ClassID     the remote's id of a class (`_id`); opaque (24-hex in practice, a UUID in the spec)
//   join link   the class's public magic link (`joinMagicLink`); a secret: anyone holding it can join
//   mapping     a row of batch_classes: batch → ClassID + join link, and how far the sync got
//   audit trail the rows of batch_events: every state transition and remote call of a batch
//   lease       a runner's claim on a batch (owner, epoch, expiry); every write names its epoch
//   drift       any difference between the mappings and what the remote lists
//   orphan      a remote class that no mapping points at
//   settle      to decide an add-class of unknown outcome from the listing (src/sync/settle.ts, after
//               SYNC_SETTLE); the word has no other sense here
export * from './batch-classes.ts';
export * from './reconciliation-runs.ts';
export * from './batch-events.ts';
export type * from './stored.ts';
export * from './class-fields.ts';
export * from './webhook-messages.ts';
export * from './webhook-routes.ts';
export * from './counts.ts';
