// The backlog of bench/scale.ts, made by SQL a step at a time: each step adds its share of the
// synced batches, the waiting ones (each institute's line going on from where it was) and the audit
// rows, so intake can be measured at each point from an empty table to the full one.
import type pg from 'pg';

export interface Backlog {
  waiting: number;
  synced: number;
  events: number;
  institutes: number;
}

/** How far the steps have filled: the next step goes on from here. */
export interface Filled {
  waiting: number;
  synced: number;
  events: number;
}

const event = (prefix: string, institutes: number) =>
  `jsonb_build_object('instituteId', 'inst-' || (g % ${institutes}), 'batchId', '${prefix}-' || g, 'name', 'Class ' || g, 'subject', 'Bench', 'extra', '{}'::jsonb)`;

/**
 * Step `step` of `steps`: `synced` batches with a class and link (and, from the outbox trigger, a
 * pending webhook message each), `waiting` backfill batches at the end of their institutes' lines
 * (received an hour ago: every one looks "untouched" to the sweep), and audit rows spread over every
 * batch recorded so far. Returns what is filled after it.
 */
export async function fillStep(pool: pg.Pool, n: Backlog, done: Filled, step: number, steps: number): Promise<Filled> {
  const share = (total: number, sofar: number) => (step === steps ? total - sofar : Math.round((total * step) / steps) - sofar);
  const synced = share(n.synced, done.synced);
  const waiting = share(n.waiting, done.waiting);
  const events = share(n.events, done.events);
  await pool.query(`
    insert into batch_classes (institute_id, batch_id, class_name, event, applied_event, state, lane, class_id, join_link, synced_at, updated_at, received_at)
    select 'inst-' || (g % ${n.institutes}), 'synced-' || g, 'Class ' || g, ${event('synced', n.institutes)}, ${event('synced', n.institutes)}, 'synced', 'backfill',
           lpad(to_hex(g), 24, '0'), 'https://join.example/' || g, now() - interval '2 hours', now() - interval '2 hours', now() - interval '3 hours'
      from generate_series(${done.synced + 1}, ${done.synced + synced}) g`);
  // Each institute's line goes on after its last waiting batch (intake's own batches included),
  // read once per institute (inlined, the end was read again for every row).
  await pool.query(`
    with ends as materialized (
      select i, coalesce((select b.line from batch_classes b
                           where b.institute_id = 'inst-' || i and b.lane = 'backfill' and b.state = 'pending' and b.line is not null
                           order by b.line desc limit 1), -1) as last
        from generate_series(0, ${n.institutes - 1}) i)
    insert into batch_classes (institute_id, batch_id, class_name, event, state, lane, line, updated_at, received_at)
    select 'inst-' || (g % ${n.institutes}), 'waiting-' || g, 'Class ' || g, ${event('waiting', n.institutes)}, 'pending', 'backfill',
           e.last + 1 + (g - ${done.waiting + 1}) / ${n.institutes}, now() - interval '1 hour', now() - interval '1 hour'
      from generate_series(${done.waiting + 1}, ${done.waiting + waiting}) g join ends e on e.i = g % ${n.institutes}`);
  await fillEvents(pool, events);
  await pool.query('analyze batch_classes; analyze batch_events; analyze webhook_messages');
  return { synced: done.synced + synced, waiting: done.waiting + waiting, events: done.events + events };
}

/** `n` audit rows spread over every batch recorded so far, at times over the last day. */
async function fillEvents(pool: pg.Pool, n: number): Promise<void> {
  const { rows } = await pool.query<{ min: string; max: string }>('select min(id) as min, max(id) as max from batch_classes');
  const [min, max] = [Number(rows[0]!.min), Number(rows[0]!.max)];
  for (let done = 0; done < n; done += 1_000_000) {
    const size = Math.min(1_000_000, n - done);
    await pool.query(`
      insert into batch_events (batch_row_id, type, operation, outcome, at)
      select ${min} + (g % ${max - min + 1}), 'remote_call', 'addClass', 'ok', now() - (g % 86400) * interval '1 second'
        from generate_series(${done + 1}, ${done + size}) g`);
  }
}

/**
 * The synced batches' webhook messages as after an outage: half delivered (20 days ago, inside the
 * retention), the other half still pending, all but one in 5,000 waiting for a retry an hour away.
 * Returns how many are pending and how many of those are due.
 */
export async function outboxAfterOutage(pool: pg.Pool): Promise<{ pending: number; due: number }> {
  await pool.query(`
    update webhook_messages
       set status = case when id % 2 = 0 then 'delivered' else 'pending' end,
           delivered_at = case when id % 2 = 0 then now() - interval '20 days' end,
           occurred_at = case when id % 2 = 0 then now() - interval '20 days' else occurred_at end,
           attempts = case when id % 2 = 0 then 1 else 3 end,
           next_attempt_at = case when id % 2 = 1 and id % 5000 <> 1 then now() + interval '1 hour' else next_attempt_at end`);
  await pool.query('vacuum analyze webhook_messages');
  const { rows } = await pool.query<{ pending: number; due: number }>(
    `select count(*)::int as pending, count(*) filter (where next_attempt_at <= now())::int as due from webhook_messages where status = 'pending'`,
  );
  return rows[0]!;
}

export interface TableSize {
  table: string;
  rows: number;
  /** Heap, indexes and TOAST, bytes. */
  total: number;
  indexes: number;
  /** Each index's bytes. */
  each: Record<string, number>;
}

/** Each table's size on disk, its indexes' and its row count (exact: counted). */
export async function tableSizes(pool: pg.Pool): Promise<TableSize[]> {
  const sizes: TableSize[] = [];
  for (const table of ['batch_classes', 'batch_events', 'webhook_messages']) {
    const { rows } = await pool.query<{ rows: string; total: string; indexes: string }>(
      `select (select count(*) from ${table}) as rows, pg_total_relation_size($1::regclass) as total, pg_indexes_size($1::regclass) as indexes`,
      [table],
    );
    const { rows: each } = await pool.query<{ name: string; bytes: string }>(
      `select indexrelid::regclass::text as name, pg_relation_size(indexrelid) as bytes from pg_index where indrelid = $1::regclass order by 2 desc`,
      [table],
    );
    const row = rows[0]!;
    sizes.push({
      table,
      rows: Number(row.rows),
      total: Number(row.total),
      indexes: Number(row.indexes),
      each: Object.fromEntries(each.map((i) => [i.name, Number(i.bytes)])),
    });
  }
  return sizes;
}
