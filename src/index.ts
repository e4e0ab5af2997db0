// classroom-sync as a library: what the integrator's Node code may import. Everything here is
// public contract; the rest of src/ is internal and may change.
//
//   import { createClassroomSync } from 'classroom-sync';
//   const sync = createClassroomSync();            // config from the environment
//   await sync.publishBatchCreated({ batchId: 'B-1001', name: 'Algebra I', subject: 'Maths' });
//   const mapping = await sync.getBatch('B-1001');  // state, classId, joinLink once synced
//   await sync.close();

// The convenience handle.
export { createClassroomSync, type ClassroomSync, type ClassroomSyncOptions } from './library/classroom-sync.ts';

// Publishing batch events with dependencies you build yourself (e.g. from createRuntime).
export {
  publishBatchCreated,
  publishBatchUpdated,
  publishBatchCancelled,
  publishBatches,
  type AcceptedBatch,
  type IntakeOutcome,
  type PublishDeps,
  type PublishOutcome,
} from './intake/publish.ts';
export {
  parseBatchCreated,
  parseBatchEvent,
  InvalidEventError,
  EVENT_TYPES,
  type BatchCreated,
  type BatchCreatedInput,
  type BatchUpdated,
  type BatchUpdatedInput,
  type BatchCancelled,
  type BatchCancelledInput,
  type BatchEvent,
  type EventType,
  type FieldProblem,
} from './intake/schema.ts';

// Reading mappings.
export { getBatch, listBatches, type BatchPage, type ListBatchesQuery } from './library/mappings.ts';
export { countByState, type BatchView } from './read-model/index.ts';
export { BATCH_STATES, TERMINAL_STATES, type BatchState } from './mapping/index.ts';
export { maskJoinLink } from './logging/logger.ts';

// Configuration.
export { loadConfig, ConfigError, SANDBOX_DEFAULTS, type Config } from './config/config.ts';

// Errors of the remote service, classified by what they mean for a retry.
export {
  ClassroomError,
  NotSentError,
  RejectedError,
  ThrottledError,
  OutcomeUnknownError,
  isClassroomError,
  type ClassroomOperation,
  type FailureKind,
} from './classroom/errors.ts';

// Running the service in your own process, and its database.
export { runMigrations, DatabaseUnreachableError } from './db/migrate.ts';
export { createRuntime, type Runtime, type RuntimeOptions } from './runtime/runtime.ts';
export { createSyncWorker, type SyncWorker, type SyncWorkerDeps, type SyncWorkerOptions } from './sync/sync-worker.ts';
export { abandonBatches, undoAbandon, BatchAbandonedError, type AbandonResult, type UndoAbandonResult } from './sync/abandon-batches.ts';

// The local stand-in for the remote, for the integrator's own tests.
export { startSandbox, sandboxOptionsFromConfig, type RunningSandbox, type SandboxOptions } from './sandbox/index.ts';
