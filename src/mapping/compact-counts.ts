import { sql } from 'drizzle-orm';
import { type Db, execute } from './sql.ts';

/** One fold at a time across the fleet (its transaction's advisory lock): two folds of a large backlog could deadlock. */
const FOLD_LOCK = 7_316_024_013;

/**
 * Folds batch_counts' deltas into one row per key (the worker's housekeeping, every sweep). One
 * statement a table: a reader sees the deltas or their sum, never neither. A delta appended meanwhile
 * is not in the statement's snapshot, so it is neither deleted nor summed; it stays for the next fold.
 * A fold that finds another under way folds nothing. Returns how many rows were folded.
 */
export async function compactCounts(db: Db): Promise<number> {
  const mine = sql`(select pg_try_advisory_xact_lock(${FOLD_LOCK}))`;
  const batches = await execute(
    db,
    sql`with gone as (delete from batch_counts where ${mine} returning institute_id, state, lane, n)
        insert into batch_counts (institute_id, state, lane, n)
        select institute_id, state, lane, sum(n) from gone group by 1, 2, 3 having sum(n) <> 0`,
  );
  const messages = await execute(
    db,
    sql`with gone as (delete from webhook_message_counts where ${mine} returning status, n)
        insert into webhook_message_counts (status, n) select status, sum(n) from gone group by 1 having sum(n) <> 0`,
  );
  return (batches.rowCount ?? 0) + (messages.rowCount ?? 0);
}
