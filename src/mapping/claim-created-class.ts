import { sql } from 'drizzle-orm';
import { type Db, stateList, traceIdNow } from './sql.ts';
import type { BatchState } from './types.ts';

/** Where a found class may be claimed: any state of a batch without a class but `abandoned` (reconciliation then reports an orphan). */
const CLAIMABLE_STATES: readonly BatchState[] = ['pending', 'creating', 'failed', 'needs_review', 'cancelled'];

/**
 * Stores a ClassID we know was just created even though the run lost its lease: the class exists
 * whoever holds the lease now, and forgetting it is how duplicates start. Fills only an empty slot,
 * and also settles a batch that was meanwhile failed or sent to needs_review for want of exactly this
 * fact (the sweep picks it up from `created`), or cancelled (it keeps its cancel, so a run archives
 * the class); false when the batch already has a class or was abandoned (reconciliation then
 * reports ours as an orphan).
 *
 * It also ends the lease of whoever holds the batch now (a new epoch, no owner): that run decided
 * from a view without this class, and its next write ("no class listed: send add-class again",
 * "undecidable: needs_review") would overwrite the state and strand or duplicate the class. Its
 * write fails as a lost lease instead, and its job comes back to find the class stored.
 */
export async function claimCreatedClass(db: Db, rowId: number, classId: string, workerId: string): Promise<boolean> {
  const result = await db.execute(sql`
    with before as (
      select id, state from batch_classes
       where id = ${rowId} and class_id is null and state in (${stateList(CLAIMABLE_STATES)})
       for update
    ), claimed as (
      update batch_classes b
         set class_id = ${classId}, state = 'created', class_created_at = now(), create_acked_at = now(), review = null, failed_at = null,
             lease_epoch = b.lease_epoch + 1, lease_owner = null, lease_expires_at = null, updated_at = now()
        from before where b.id = before.id
      returning b.id, before.state
    )
    insert into batch_events (batch_row_id, type, from_state, to_state, worker_id, class_id, detail, trace_id)
    select id, 'transition', state::text, 'created', ${workerId}, ${classId}, '{"resolution":"stored_after_lease_lost"}'::jsonb, ${traceIdNow()} from claimed
    returning batch_row_id`);
  return (result.rowCount ?? 0) > 0;
}
