// The mapping module owns batch_classes, batch_events, reconciliation_runs, webhook_messages and webhook_routes (outbox/): every read and write
// of them is one named operation here, one statement per file (the rest of the code calls
// `mapping.markSynced(...)`, never a table). A state change and the audit rows that explain it are
// one statement, fenced by the writer's lease epoch where a sync run writes.
//
// Who calls what: intake records batches (recordReceived, statesOf); a sync run moves one batch
// along (acquireLease → markCreating → storeClass → markSynced, or releaseLease; edit-class's
// `link_enabled` has no write of its own: it travels with the next one, see unstored.ts);
// operators retry, abandon and restore; reconciliation reads an institute's rows and repairs them;
// the read model (src/read-model) serves status, the HTTP API, metrics and the library.
export * from './types.ts';
export * from './errors.ts';
export { type ClaimsOnCandidates, claimsOnCandidates } from './claims-on-candidates.ts';
export { type AcknowledgedCreate, acknowledgedCreates } from './acknowledged-creates.ts';
export { type AcquireResult, acquireLease, changeDue, wantsRun } from './acquire-lease.ts';
export { adoptCandidates } from './adopt-candidates.ts';
export { type BatchFacts, readBatchFacts } from './read-batch-facts.ts';
export { batchesOfInstitute } from './batches-of-institute.ts';
export { claimCreatedClass } from './claim-created-class.ts';
export { type RunClose, closeRun } from './close-run.ts';
export { countByInstituteAndState } from './count-by-institute-and-state.ts';
export { compactCounts } from './compact-counts.ts';
export { countByState } from './count-by-state.ts';
export { findBatch } from './find-batch.ts';
export { type Requeueable, type StuckTier, findStuck } from './find-stuck.ts';
export { forgetCreate } from './forget-create.ts';
export { doubtReview, failedState, mayHaveClass, nothingSent } from './doubt.ts';
export { institutesOf } from './institutes-of.ts';
export { institutesWithBatches } from './institutes-with-batches.ts';
export { type LaneStat, laneStats } from './lane-stats.ts';
export { lastLinkCursor } from './last-link-cursor.ts';
export { type BatchFilter, listBatches } from './list-batches.ts';
export { ABANDONABLE_STATES, markAbandoned } from './mark-abandoned.ts';
export { markCreating } from './mark-creating.ts';
export { markExhausted } from './mark-exhausted.ts';
export { markNeedsReview } from './mark-needs-review.ts';
export { markSynced } from './mark-synced.ts';
export { openRun } from './open-run.ts';
export { pruneEvents } from './prune-events.ts';
export { readTimeline } from './read-timeline.ts';
export { type ReconciliationRunRow, recentRuns } from './recent-runs.ts';
export { type ReconcileRow, reconcileRows } from './reconcile-rows.ts';
export { type ReceivedBatch, type RecordedBatch, recordReceived } from './record-received.ts';
export { recordRequeues } from './record-requeues.ts';
export { redoLinkStep } from './redo-link-step.ts';
export { type RunEnd, releaseLease } from './release-lease.ts';
export type { Unstored } from './unstored.ts';
export { type ClassEditRequest, requestClassEdit } from './request-class-edit.ts';
export { type RetryRow, requestRetry } from './request-retry.ts';
export { resetLinkSteps } from './reset-link-steps.ts';
export { restoreAbandoned } from './restore-abandoned.ts';
export { ruleOutClass } from './rule-out-class.ts';
export { statesOf } from './states-of.ts';
export { storeClass } from './store-class.ts';
export { storedLinks } from './stored-links.ts';
export { touchLease } from './touch-lease.ts';
export type { Db, ProgressRow } from './sql.ts';
export * as outbox from './outbox/index.ts';
export { type ChangePlan, type ChangeResult, type ChangeSet, applyChange } from './apply-change.ts';
export { markCancelled } from './mark-cancelled.ts';
export { type Carried, markEditRefused } from './mark-edit-refused.ts';
export { markEdited } from './mark-edited.ts';
