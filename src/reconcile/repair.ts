// The only changes a pass makes. None can create a second class or delete one:
//   stuck                  re-enqueue (the state machine resumes from its last recovery point)
//   link_missing           back to `created`, then re-enqueue: edit-class (idempotent) and get-class run again
//   needs_review_resolved  store the single safe candidate as the ClassID (state `created`), then re-enqueue
// Each update is one set-based statement guarded by the state it was classified in, so a row that a
// sync run moved in the meantime is left alone (counted as skipped).
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

export async function repair(deps: { db: Db; queue: SyncQueue; logger: Logger }, input: RepairInput): Promise<RepairOutcome> {
  const reset = await resetLinkSteps(deps.db, input.linkMissing);
  const adopted = await adoptCandidates(deps.db, input.adopt);
  const keys: BatchKey[] = [...input.stuck.map(keyOf), ...reset, ...adopted];
  let requeued = 0;
  await eachLimited(keys, 16, async (key) => {
    if (await requeue(deps.queue, key)) requeued += 1;
  });
  const skipped = input.linkMissing.length - reset.length + (input.adopt.length - adopted.length);
  if (skipped > 0) deps.logger.info({ skipped }, 'some repairs were skipped: the batch changed since it was classified');
  return { requeued, linkStepsReset: reset.length, adopted: adopted.length, skipped, adoptions: adopted };
}

const keyOf = (f: Finding): BatchKey => ({ instituteId: f.instituteId, batchId: f.batchId! });

/** Synced rows go back to `created`; the stale link is cleared so nobody hands it out meanwhile. */
async function resetLinkSteps(db: Db, findings: readonly Finding[]): Promise<BatchKey[]> {
  if (findings.length === 0) return [];
  const ids = findings.map((f) => f.rowId!);
  const result = await db.execute<{ institute_id: string; batch_id: string }>(sql`
    update batch_classes
       set state = 'created', join_link = null, link_enabled_at = null, synced_at = null, updated_at = now()
     where id = any(${sql.param(ids)}::bigint[]) and state = 'synced' and class_id is not null and lease_owner is null
    returning institute_id, batch_id`);
  return result.rows.map((r) => ({ instituteId: r.institute_id, batchId: r.batch_id }));
}

/** Stores each candidate unless the row left needs_review or the class got mapped elsewhere meanwhile. */
async function adoptCandidates(db: Db, findings: readonly Finding[]): Promise<RepairOutcome['adoptions']> {
  if (findings.length === 0) return [];
  const ids = findings.map((f) => f.rowId!);
  const classIds = findings.map((f) => f.classId!);
  const result = await db.execute<{ institute_id: string; batch_id: string; class_id: string }>(sql`
    update batch_classes b
       set class_id = v.class_id, state = 'created', class_created_at = now(), review = null,
           last_error = null, last_error_kind = null, failed_at = null, attempts = 0, updated_at = now()
      from (select unnest(${sql.param(ids)}::bigint[]) as id, unnest(${sql.param(classIds)}::text[]) as class_id) v
     where b.id = v.id and b.state = 'needs_review' and b.class_id is null
       and not exists (select 1 from batch_classes o where o.class_id = v.class_id)
    returning b.institute_id, b.batch_id, b.class_id`);
  return result.rows.map((r) => ({ instituteId: r.institute_id, batchId: r.batch_id, classId: r.class_id }));
}
