// Glossary
//   batch       a group of students in the integrator's own system, named by its batchId
//   class       the remote service's counterpart of a batch (also "room"); one per batch, never two
//   ClassID     the remote's id of a class (`_id`); opaque (24-hex in practice, a UUID in the spec)
//   join link   the class's public magic link (`joinMagicLink`); a secret: anyone holding it can join
//   mapping     a row of batch_classes: batch → ClassID + join link, and how far the sync got
//   drift       any difference between the mappings and what the remote lists
//   orphan      a remote class that no mapping points at
export * from './batch-classes.ts';
export * from './reconciliation-runs.ts';
export * from './batch-events.ts';
export type * from './stored.ts';
export * from './class-fields.ts';
export * from './webhook-messages.ts';
export * from './webhook-routes.ts';
export * from './counts.ts';
