import { sql } from 'drizzle-orm';
import { TERMINAL_STATES } from '../db/schema/index.ts';
import { type Db, execute, interval } from './sql.ts';
import type { BatchKey, BatchLane, BatchState } from './types.ts';

const terminal = sql.join(
  TERMINAL_STATES.map((s) => sql`${s}::batch_state`),
  sql`, `,
);

/** A batch to put back on the queue, with what its job's place in the queue depends on. */
export interface Requeueable extends BatchKey {
  lane: BatchLane;
  state: BatchState;
}

/** Unfinished batches nobody has touched for `stuckAfterMs` and nobody holds a lease on, oldest first. */
export async function findStuck(db: Db, stuckAfterMs: number, limit: number): Promise<Requeueable[]> {
  const result = await execute<Requeueable>(
    db,
    sql`
    select institute_id as "instituteId", batch_id as "batchId", lane, state from batch_classes
     where state not in (${terminal}) and updated_at < now() - ${interval(stuckAfterMs)}
       and (lease_expires_at is null or lease_expires_at < now())
     order by updated_at limit ${limit}`,
  );
  return result.rows;
}
