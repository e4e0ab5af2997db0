// An institute's line in a lane (migrations/0012_lines.sql): the pieces of SQL that intake
// (./record-received.ts) and the sweep (./find-stuck.ts) read it with. src/db/backfills.ts has its
// own copy of `waitingLineEnd('min', …)`: src/db may not import this module.
import { type SQL, sql } from 'drizzle-orm';

/**
 * The line of the first (`min`) or the last (`max`) batch waiting in `institute`'s line in `lane`
 * (both SQL expressions), null when none waits: one entry of batch_classes_waiting_line_idx.
 */
export function waitingLineEnd(end: 'min' | 'max', institute: SQL, lane: SQL): SQL {
  // Written as the index's own order, not min()/max(): on a table not yet analyzed (a new
  // deployment's first import) the planner otherwise took another partial index and read every
  // waiting batch of the lane to find one institute's end.
  const order = sql.raw(end === 'min' ? 'asc' : 'desc');
  return sql`(select w.line from batch_classes w where w.institute_id = ${institute} and w.lane = ${lane} and w.state = 'pending' and w.line is not null
               order by w.institute_id ${order}, w.lane ${order}, w.line ${order} limit 1)`;
}

/** A job's place from its line and its line's first waiting one: 0 or more, and an int (BullMQ's band clamps it further). */
export function placeOf(line: SQL, first: SQL): SQL {
  return sql`least(greatest(0, ${line} - ${first}), 2147483647)::int`;
}
