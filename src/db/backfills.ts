// Data a migration leaves for later: rows it would otherwise rewrite all at once. `migrate` runs each
// backfill after the SQL migrations, under the same lock, a few thousand rows per statement (each its
// own short transaction), so workers writing those rows wait for one small statement at most. Each
// statement reads only about the rows it writes (through a partial index, or the next ids after the
// last step's), and a backfill stopped half-way (a crash, a lost connection) goes on at the next
// `migrate`: every statement finds what is left from the rows themselves.
import { sql } from 'drizzle-orm';
import type { Db } from './client.ts';

/** Rows per statement: small enough that a writer waiting for one of them waits milliseconds. */
const STEP = 2_000;

/** What one step did: the rows it changed, and whether it was the last. */
export interface Stepped {
  changed: number;
  done: boolean;
}

export interface Backfill {
  name: string;
  /** Starts a run: each call of the step it returns is one statement of at most `rows` rows, and may keep where it got to. */
  start(): (db: Db, rows: number) => Promise<Stepped>;
}

/**
 * migrations/0012_lines.sql: batches already waiting when lines came get a line each, below the
 * first line of their institute's lane (they were recorded before any batch numbered since), in the
 * order they were recorded. Numbered from the newest down, so a new batch recorded meanwhile (at the
 * end of the line) and this step (at its start) never meet.
 */
const WAITING_LINES: Backfill = {
  name: 'lines of waiting batches',
  start: () => async (db, rows) => {
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
    const changed = result.rowCount ?? 0;
    return { changed, done: changed === 0 };
  },
};

/**
 * migrations/0008_batch_changes.sql: a class made before batches could change was given the values
 * its batch was recorded with, so `applied_event = event` where there is (or may be) a class. The
 * migration did it in one statement, which on a large table held every such row for seconds.
 *
 * The rows are walked by id, `rows` of them a statement, through a partial index of the rows still
 * to fill (batch_classes_unapplied_idx, migrations/0013): no statement reads rows another already
 * passed, and a `migrate` that finds nothing left (every start of a worker) reads one index entry. `applied_event is
 * null` is in the update's own condition: a worker that wrote one meanwhile (an edit, a new add-class)
 * keeps it. A row still null meanwhile reads as filled: what reads it, the outbox trigger's
 * batch.updated (0010) and a refused edit's read-back (src/mapping/mark-edit-refused.ts), reads
 * `coalesce(applied_event, event)`, and what writes it sets it whole or from that same coalesce. Only
 * a change recorded on the row before its step (intake replaces `event`) would be taken for what the
 * class was given; a worker of this version records none before its `migrate`, this backfill
 * included, is over (one migrates, the others wait for its lock).
 */
/** The rows still to fill, written as batch_classes_unapplied_idx's predicate so both statements read that index only. */
const UNAPPLIED = sql`applied_event is null and (class_id is not null or state <> 'pending')`;

const APPLIED_EVENTS: Backfill = {
  name: 'applied values of classes made before changes',
  start() {
    let after = 0;
    return async (db, rows) => {
      const result = await db.execute<{ last: string | null; changed: number }>(sql`
        with next as (
          select id from batch_classes where id > ${after} and ${UNAPPLIED} order by id limit ${rows}
        ), filled as (
          -- The window as a range of the key, not a join to its ids: a range scan in any plan.
          update batch_classes set applied_event = event
           where id > ${after} and id <= (select max(id) from next)
             and ${UNAPPLIED}
          returning id
        )
        select (select max(id) from next)::text as last, (select count(*) from filled)::int as changed`);
      const last = result.rows[0]?.last ?? null;
      if (last !== null) after = Number(last);
      return { changed: result.rows[0]?.changed ?? 0, done: last === null };
    };
  },
};

export const BACKFILLS: readonly Backfill[] = [WAITING_LINES, APPLIED_EVENTS];

/** Runs every backfill to its end; returns the rows each changed. */
export async function runBackfills(db: Db, backfills: readonly Backfill[] = BACKFILLS, rows = STEP): Promise<Record<string, number>> {
  const changed: Record<string, number> = {};
  for (const backfill of backfills) {
    const step = backfill.start();
    let total = 0;
    let stepped: Stepped;
    do {
      stepped = await step(db, rows);
      total += stepped.changed;
    } while (!stepped.done);
    changed[backfill.name] = total;
  }
  return changed;
}
