import { type SQL, sql } from 'drizzle-orm';
import { CHANGEABLE_AT_REST } from './acquire-lease.ts';
import { placeOf, waitingLineEnd } from './lines.ts';
import { type Db, execute, interval, stateList } from './sql.ts';
import { type BatchKey, type BatchLane, type BatchState, UNDER_WAY_STATES } from './types.ts';

/** A batch to put back on the queue, with what its job's place in the queue depends on. */
export interface Requeueable extends BatchKey {
  id: number;
  lane: BatchLane;
  state: BatchState;
  /**
   * Its place in its institute's line in its lane (0 first): the one intake gave it, so a rebuilt queue
   * keeps its order; for a batch queued before lines were kept, its line minus the first waiting one's.
   */
  position: number;
}

/**
 * Which unfinished batches a sweep looks at: `ahead`, those whose jobs go before any backfill (under
 * way, live, operator work, a change due), or `backfill`, the backfill lane's batches not yet under
 * way. A sweep pages through each on its own, so a large backfill never keeps it from the others.
 */
export type StuckTier = 'ahead' | 'backfill';

// The partial indexes' own predicates (migrations/0012_lines.sql), so that each page is an ordered
// scan of its index from the cursor: a page costs the same however many rows wait. A state list is
// bound as parameters, which the planner sees as constants when it plans the statement it runs.
const AHEAD = sql`(state in (${stateList(UNDER_WAY_STATES)}) or (state = 'pending' and lane <> 'backfill'))`;
const BACKFILL = sql.raw(`(state = 'pending' and lane = 'backfill')`);
// At rest with a change still to apply (batch_classes_change_due_idx).
const CHANGE_DUE = sql`(revision > applied_revision and state in (${stateList(CHANGEABLE_AT_REST)}))`;

export interface FindStuckOptions {
  /** Only rows nobody touched for this long (0: every row, as after a Redis wipe). */
  stuckAfterMs: number;
  tier: StuckTier;
  /** The keyset cursor: rows after this id. */
  afterId: number;
  limit: number;
}

/**
 * Up to `limit` unfinished batches of `tier` nobody has touched for `stuckAfterMs` and nobody holds a
 * lease on, in the order they were recorded, starting after row `afterId`; each with its place in its
 * institute's line in its lane, so a rebuilt queue interleaves institutes as intake did.
 */
export async function findStuck(db: Db, options: FindStuckOptions): Promise<Requeueable[]> {
  return (await execute<Requeueable>(db, findStuckStatement(options))).rows;
}

/** findStuck's statement (bench/scale.ts shows its plan). */
export function findStuckStatement(options: FindStuckOptions): SQL {
  const { tier, afterId, limit } = options;
  const free = sql`updated_at < now() - ${interval(options.stuckAfterMs)} and (lease_expires_at is null or lease_expires_at < now()) and id > ${afterId}`;
  const columns = sql.raw(`id, institute_id, batch_id, lane, state, line, place`);
  const page =
    tier === 'backfill'
      ? sql`select ${columns} from batch_classes where ${BACKFILL} and ${free} order by id limit ${limit}`
      : sql`select * from ((select ${columns} from batch_classes where ${AHEAD} and ${free} order by id limit ${limit})
             union all (select ${columns} from batch_classes where ${CHANGE_DUE} and ${free} order by id limit ${limit})) both_kinds
             order by id limit ${limit}`;
  return sql`
    with page as (${page}),
    firsts as (
      select l.institute_id, l.lane, ${waitingLineEnd('min', sql`l.institute_id`, sql`l.lane`)} as first
        from (select distinct institute_id, lane from page where state = 'pending' and lane <> 'operator' and place is null) l
    )
    select p.id::float8 as id, p.institute_id as "instituteId", p.batch_id as "batchId", p.lane, p.state,
           coalesce(p.place, ${placeOf(sql`p.line`, sql`f.first`)}, 0) as position
      from page p left join firsts f on f.institute_id = p.institute_id and f.lane = p.lane
     order by p.id`;
}
