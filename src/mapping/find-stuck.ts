import { sql } from 'drizzle-orm';
import { TERMINAL_STATES } from '../db/schema/index.ts';
import { type Db, execute, interval, stateList } from './sql.ts';
import { type BatchKey, type BatchLane, type BatchState, UNDER_WAY_STATES } from './types.ts';

const terminal = stateList(TERMINAL_STATES);

/** A batch to put back on the queue, with what its job's place in the queue depends on. */
export interface Requeueable extends BatchKey {
  id: number;
  lane: BatchLane;
  state: BatchState;
  /** Its place in its institute's line among the stuck batches of its lane (0 first). */
  position: number;
}

/**
 * Which unfinished batches a sweep looks at: `ahead`, those whose jobs go before any backfill (under
 * way, live, operator work), or `backfill`, the backfill lane's batches not yet under way. A sweep
 * pages through each on its own, so a large backfill never keeps it from the others.
 */
export type StuckTier = 'ahead' | 'backfill';

const UNDER_WAY = sql`state in (${stateList(UNDER_WAY_STATES)})`;

const TIERS: Record<StuckTier, ReturnType<typeof sql>> = {
  ahead: sql`(${UNDER_WAY} or lane <> 'backfill')`,
  backfill: sql`(lane = 'backfill' and not ${UNDER_WAY})`,
};

/**
 * Up to `limit` unfinished batches of `tier` nobody has touched for `stuckAfterMs` and nobody holds a
 * lease on, in the order they were recorded, starting after row `afterId`; each with its place in its
 * institute's line in its lane, so a rebuilt queue interleaves institutes as intake did.
 */
export async function findStuck(db: Db, options: { stuckAfterMs: number; tier: StuckTier; afterId: number; limit: number }): Promise<Requeueable[]> {
  const result = await execute<Requeueable>(
    db,
    sql`
    select * from (
      select id, institute_id as "instituteId", batch_id as "batchId", lane, state,
             (row_number() over (partition by institute_id, lane order by id) - 1)::int as position
        from batch_classes
       where (state not in (${terminal}) or (revision > applied_revision and state in ('synced', 'cancelled')))
         and updated_at < now() - ${interval(options.stuckAfterMs)}
         and (lease_expires_at is null or lease_expires_at < now())
         and ${TIERS[options.tier]}
    ) stuck
     where id > ${options.afterId}
     order by id limit ${options.limit}`,
  );
  return result.rows.map((row) => ({ ...row, id: Number(row.id) }));
}
