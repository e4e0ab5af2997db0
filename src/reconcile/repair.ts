// The only changes a pass makes. None can create a second class or delete one:
//   stuck                  re-enqueue (the state machine resumes from its last recovery point)
//   link_missing           back to `created`, then re-enqueue: edit-class (idempotent) and get-class run again
//   needs_review_resolved  store the single safe candidate as the ClassID (state `created`), then re-enqueue
// Each update is one set-based statement guarded by the state it was classified in, so a row that a
// sync run moved in the meantime is left alone (counted as skipped). The same statement appends a
// `repair` event to each changed batch's audit trail (batch_events), so the two never disagree.
import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import type { Logger } from '../logger.ts';
import type { BatchKey } from '../sync/keys.ts';
import type { SyncQueue } from '../sync/queue.ts';
import { requeue } from '../sync/sweep.ts';
import { eachLimited } from './mappings.ts';
import type { Finding, RepairSummary } from './types.ts';

export interface RepairInput {
  stuck: readonly Finding[];
  linkMissing: readonly Finding[];
  adopt: readonly Finding[];
}

export interface RepairOutcome extends RepairSummary {
  /** Each adoption, for the run record (an operator may want to see what was settled). */
  adoptions: { instituteId: string; batchId: string; classId: string }[];
}

export async function repair(deps: { db: Db; queue: SyncQueue; logger: Logger }, input: RepairInput, runId: number): Promise<RepairOutcome> {
  const reset = await resetLinkSteps(deps.db, input.linkMissing, runId);
  const adopted = await adoptCandidates(deps.db, input.adopt, runId);
  const keys: (BatchKey & { rowId?: number })[] = [...input.stuck.map(keyOf), ...reset, ...adopted];
  let requeued = 0;
  const requeuedStuck: number[] = [];
  await eachLimited(keys, 16, async (key) => {
    if (!(await requeue(deps.queue, key))) return;
    requeued += 1;
    if (key.rowId !== undefined) requeuedStuck.push(key.rowId);
  });
  await recordRequeues(deps.db, requeuedStuck, runId);
  const skipped = input.linkMissing.length - reset.length + (input.adopt.length - adopted.length);
  if (skipped > 0) deps.logger.info({ skipped }, 'some repairs were skipped: the batch changed since it was classified');
  return { requeued, linkStepsReset: reset.length, adopted: adopted.length, skipped, adoptions: adopted };
}

/** A stuck finding's key carries its row id, so its re-enqueue can be written to the audit trail. */
const keyOf = (f: Finding): BatchKey & { rowId?: number } => ({ instituteId: f.instituteId, batchId: f.batchId!, rowId: f.rowId! });

/** Synced rows go back to `created`; the stale link is cleared so nobody hands it out meanwhile. */
async function resetLinkSteps(db: Db, findings: readonly Finding[], runId: number): Promise<BatchKey[]> {
  if (findings.length === 0) return [];
  const result = await db.execute<{ institute_id: string; batch_id: string }>(sql`
    with v as (
      select unnest(${sql.param(findings.map((f) => f.rowId!))}::bigint[]) as id, unnest(${sql.param(findings.map((f) => f.detail ?? ''))}::text[]) as reason
    ), changed as (
      update batch_classes b
         set state = 'created', join_link = null, link_enabled_at = null, synced_at = null, updated_at = now()
        from v
       where b.id = v.id and b.state = 'synced' and b.class_id is not null and b.lease_owner is null
      returning b.id, b.institute_id, b.batch_id, b.class_id, v.reason
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, class_id, detail)
      select id, 'repair', 'synced', 'created', class_id,
             jsonb_build_object('category', 'link_missing', 'action', 'rerun_link_steps', 'reason', reason, 'reconciliationRunId', ${runId}::bigint)
        from changed
    )
    select institute_id, batch_id from changed`);
  return result.rows.map((r) => ({ instituteId: r.institute_id, batchId: r.batch_id }));
}

/**
 * Stores each candidate unless the row left needs_review or the class got mapped elsewhere meanwhile.
 * The review evidence it replaces is kept in the audit event.
 */
async function adoptCandidates(db: Db, findings: readonly Finding[], runId: number): Promise<RepairOutcome['adoptions']> {
  if (findings.length === 0) return [];
  const result = await db.execute<{ institute_id: string; batch_id: string; class_id: string }>(sql`
    with v as (
      select unnest(${sql.param(findings.map((f) => f.rowId!))}::bigint[]) as id, unnest(${sql.param(findings.map((f) => f.classId!))}::text[]) as class_id
    ), changed as (
      update batch_classes b
         set class_id = v.class_id, state = 'created', class_created_at = now(), review = null,
             last_error = null, last_error_kind = null, failed_at = null, attempts = 0, updated_at = now()
        from v
       where b.id = v.id and b.state = 'needs_review' and b.class_id is null
         and not exists (select 1 from batch_classes o where o.class_id = v.class_id)
      -- A sub-select in RETURNING reads the row as it was before this UPDATE: the evidence it replaces.
      returning b.id, b.institute_id, b.batch_id, b.class_id, (select p.review from batch_classes p where p.id = b.id) as previous_review
    ), audit as (
      insert into batch_events (batch_row_id, type, from_state, to_state, class_id, detail)
      select id, 'repair', 'needs_review', 'created', class_id,
             jsonb_build_object('category', 'needs_review_resolved', 'action', 'adopt', 'previousReview', previous_review, 'reconciliationRunId', ${runId}::bigint)
        from changed
    )
    select institute_id, batch_id, class_id from changed`);
  return result.rows.map((r) => ({ instituteId: r.institute_id, batchId: r.batch_id, classId: r.class_id }));
}

/** Stuck batches change no state; their re-enqueue is still worth a line in their timeline. */
async function recordRequeues(db: Db, rowIds: readonly number[], runId: number): Promise<void> {
  if (rowIds.length === 0) return;
  await db.execute(sql`
    insert into batch_events (batch_row_id, type, from_state, to_state, detail)
    select b.id, 'repair', b.state::text, b.state::text,
           jsonb_build_object('category', 'stuck', 'action', 'requeue', 'reconciliationRunId', ${runId}::bigint)
      from batch_classes b where b.id = any(${sql.param(rowIds)}::bigint[])`);
}
