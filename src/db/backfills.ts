// Data a migration leaves for later: rows it would otherwise rewrite all at once. `migrate` runs each
// backfill after the SQL migrations, under the same lock, a few thousand rows per statement (each its
// own short transaction), so workers writing those rows wait for one small statement at most. Each
// statement finds its own remaining rows through a partial index, and a backfill stopped half-way
// (a crash, a lost connection) goes on from where it was at the next `migrate`.
import { sql } from 'drizzle-orm';
import type { Db } from './client.ts';

/** Rows per statement: small enough that a writer waiting for one of them waits milliseconds. */
const STEP = 2_000;

export interface Backfill {
  name: string;
  /** Does one step; returns how many rows it changed (0: done). */
  step(db: Db, rows: number): Promise<number>;
}

/**
 * migrations/0012_lines.sql: batches already waiting when lines came get a line each, below the
 * first line of their institute's lane (they were recorded before any batch numbered since), in the
 * order they were recorded. Numbered from the newest down, so a new batch recorded meanwhile (at the
 * end of the line) and this step (at its start) never meet.
 */
const WAITING_LINES: Backfill = {
  name: 'lines of waiting batches',
  async step(db, rows) {
    const result = await db.execute(sql`
      with todo as (
        select id, institute_id, lane from batch_classes where state = 'pending' and line is null order by id desc limit ${rows}
      ), firsts as (
        -- src/mapping/lines.ts's waitingLineEnd('min', …), written out: src/db may not import src/mapping.
        select t.institute_id, t.lane,
               (select b.line from batch_classes b where b.institute_id = t.institute_id and b.lane = t.lane and b.state = 'pending' and b.line is not null
                 order by b.institute_id, b.lane, b.line limit 1) as first
          from (select distinct institute_id, lane from todo) t
      ), numbered as (
        select t.id, coalesce(f.first, 0) - row_number() over (partition by t.institute_id, t.lane order by t.id desc) as line
          from todo t join firsts f using (institute_id, lane)
      )
      update batch_classes b set line = n.line from numbered n where b.id = n.id and b.state = 'pending' and b.line is null`);
    return result.rowCount ?? 0;
  },
};

export const BACKFILLS: readonly Backfill[] = [WAITING_LINES];

/** Runs every backfill to its end; returns the rows each changed. */
export async function runBackfills(db: Db, backfills: readonly Backfill[] = BACKFILLS, rows = STEP): Promise<Record<string, number>> {
  const changed: Record<string, number> = {};
  for (const backfill of backfills) {
    let total = 0;
    for (let n = await backfill.step(db, rows); n > 0; n = await backfill.step(db, rows)) total += n;
    changed[backfill.name] = total;
  }
  return changed;
}
