import { PgDialect } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { runMigrations } from '../../src/db/migrate.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import * as mapping from '../../src/mapping/index.ts';
import { laneStatsStatement } from '../../src/mapping/lane-stats.ts';
import { BATCH_STATES } from '../../src/db/schema/index.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { databaseAtMigration } from '../helpers/migrations.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h, defer } = useHarness();

const events = (prefix: string, n: number, instituteId: string) =>
  Array.from({ length: n }, (_, i) => ({ batchId: `${prefix}-${i}`, name: `${prefix} ${i}`, subject: 'Art', instituteId }));

const byKey = <T extends { instituteId: string; state: string }>(rows: T[]) =>
  rows.sort((a, b) => `${a.instituteId} ${a.state}`.localeCompare(`${b.instituteId} ${b.state}`));

/** What the counts should say: the rows themselves, counted. */
async function counted(pool: pg.Pool | pg.Client) {
  const byState = Object.fromEntries(BATCH_STATES.map((s) => [s, 0]));
  const { rows } = await pool.query<{ state: string; n: number }>('select state, count(*)::int as n from batch_classes group by 1');
  for (const row of rows) byState[row.state] = row.n;
  const { rows: lanes } = await pool.query<{ lane: string; n: number }>(
    `select case when state in ('creating', 'created', 'link_enabled') then 'under_way' else lane::text end as lane, count(*)::int as n
       from batch_classes where state in ('pending', 'creating', 'created', 'link_enabled') group by 1`,
  );
  const { rows: pending } = await pool.query<{ n: number }>(`select count(*)::int as n from webhook_messages where status = 'pending'`);
  const { rows: perInstitute } = await pool.query<{ instituteId: string; state: string; n: number }>(
    'select institute_id as "instituteId", state, count(*)::int as n from batch_classes group by 1, 2',
  );
  return { byState, lanes: Object.fromEntries(lanes.map((l) => [l.lane, l.n])), pending: pending[0]!.n, perInstitute: byKey(perInstitute) };
}

/** What the counts say. */
async function kept(harness: Harness) {
  const db = harness.runtime.database.db;
  const lanes = await mapping.laneStats(db);
  const perInstitute = byKey(await mapping.countByInstituteAndState(db));
  return {
    byState: await mapping.countByState(db),
    lanes: Object.fromEntries(Object.entries(lanes).flatMap(([lane, stat]) => (stat.batches > 0 ? [[lane, stat.batches]] : []))),
    pending: (await mapping.outbox.outboxStats(db)).pending,
    perInstitute,
  };
}

async function insertMessages(pool: pg.Pool, n: number): Promise<void> {
  await pool.query(
    `insert into webhook_messages (message_id, batch_row_id, institute_id, batch_id, type, data)
     select 'msg_' || md5(random()::text), id, institute_id, batch_id, 'batch.synced', '{}'::jsonb from batch_classes order by id limit $1`,
    [n],
  );
}

/** Whether a statement containing `text` (another session's, in this database) is waiting for a lock. */
async function waitingOn(pool: pg.Pool, text: string): Promise<boolean> {
  const { rows } = await pool.query(
    `select 1 from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and wait_event_type = 'Lock' and query ilike $1`,
    [`%${text}%`],
  );
  return rows.length > 0;
}

describe('kept counts', () => {
  it('equal the rows after every kind of change, before and after the deltas are folded', async () => {
    const pool = h.runtime.database.pool;
    await pool.query('truncate batch_classes cascade');
    expect(await kept(h)).toEqual(await counted(pool));
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('a', 30, 'inst-a'), { lane: 'backfill' });
    await publishBatches(deps, events('b', 20, 'inst-b'));
    // The same batches again: nothing new, nothing counted twice.
    await publishBatches(deps, events('a', 30, 'inst-a'), { lane: 'backfill' });
    await pool.query(`update batch_classes set state = 'creating' where batch_id in ('a-0', 'a-1', 'b-0')`);
    await pool.query(`update batch_classes set state = 'synced', class_id = md5(batch_id), join_link = 'https://j/' || batch_id where batch_id = 'b-0'`);
    await pool.query(`update batch_classes set state = 'failed' where batch_id = 'a-2'`);
    // A lane that changes alone (a waiting backfill batch moved up), and a write that changes nothing counted.
    await pool.query(`update batch_classes set lane = 'operator', lane_since = now() where batch_id in ('a-3', 'a-4')`);
    await pool.query(`update batch_classes set updated_at = now() where institute_id = 'inst-a'`);
    await pool.query(`delete from batch_classes where batch_id in ('a-5', 'b-1')`);
    // A change rolled back leaves no delta behind.
    const client = await pool.connect();
    await client.query('begin');
    await client.query(`update batch_classes set state = 'abandoned' where institute_id = 'inst-b'`);
    await client.query('rollback');
    client.release();
    await insertMessages(pool, 12);
    await pool.query(`update webhook_messages set status = 'delivered' where id in (select id from webhook_messages order by id limit 5)`);
    await pool.query(`delete from webhook_messages where status = 'delivered'`);

    const expected = await counted(pool);
    expect(expected.byState).toMatchObject({ pending: 44, creating: 2, synced: 1, failed: 1 });
    expect(expected.pending).toBeGreaterThan(0);
    expect(await kept(h)).toEqual(expected);
    const { rows: before } = await pool.query<{ n: number }>('select count(*)::int as n from batch_counts');
    await mapping.compactCounts(h.runtime.database.db);
    expect(await kept(h)).toEqual(expected);
    // Folded: one row per institute, state and lane.
    const { rows: after } = await pool.query<{ n: number; keys: number }>(
      'select count(*)::int as n, count(distinct (institute_id, state, lane))::int as keys from batch_counts',
    );
    expect(after[0]!.n).toBe(after[0]!.keys);
    expect(after[0]!.n).toBeLessThan(before[0]!.n);
    // Emptied tables count nothing, folded or not.
    await pool.query('truncate batch_classes cascade');
    expect(await kept(h)).toEqual(await counted(pool));
    expect(Object.values((await kept(h)).byState).every((n) => n === 0)).toBe(true);
  });

  it('lose nothing when folds run while writers move rows and roll some moves back', async () => {
    const pool = h.runtime.database.pool;
    await pool.query('truncate batch_classes cascade');
    await publishBatches(publishDepsOf(h), [...events('w', 40, 'inst-w'), ...events('v', 40, 'inst-v')]);
    const states = ['pending', 'creating', 'created', 'link_enabled', 'synced', 'failed'];
    const writer = async (seed: number) => {
      for (let i = 0; i < 60; i += 1) {
        const client = await pool.connect();
        try {
          await client.query('begin');
          const state = states[(seed + i) % states.length];
          await client.query(`update batch_classes set state = $1, lane = $2 where id % 7 = $3`, [state, i % 2 ? 'live' : 'backfill', (seed + i) % 7]);
          await client.query((seed + i) % 5 === 0 ? 'rollback' : 'commit');
        } finally {
          client.release();
        }
      }
    };
    let folding = true;
    const folds = (async () => {
      let n = 0;
      while (folding || n === 0) {
        await mapping.compactCounts(h.runtime.database.db);
        n += 1;
      }
      return n;
    })();
    await Promise.all([writer(0), writer(3), writer(5)]);
    folding = false;
    expect(await folds).toBeGreaterThan(0);
    expect(await kept(h)).toEqual(await counted(pool));
  });

  it('are emptied with the rows by a truncate that meets a fold half done', async () => {
    // A fold (one DELETE … RETURNING + INSERT) that has deleted the deltas and not yet committed when
    // a TRUNCATE's trigger empties the counts: the trigger's DELETE must not leave the fold's sums
    // behind, counting rows that are gone. `blocker` holds the last delta, so the fold stops there.
    const pool = h.runtime.database.pool;
    for (const counts of ['batch_counts', 'webhook_message_counts']) {
      await pool.query('truncate batch_classes cascade');
      await publishBatches(publishDepsOf(h), [...events(`t-${counts}`, 10, 'inst-t'), ...events(`u-${counts}`, 10, 'inst-u')]);
      await pool.query(`update batch_classes set state = 'failed' where batch_id like 'u-%'`);
      await insertMessages(pool, 4);
      await pool.query(`update webhook_messages set status = 'delivered' where id = (select min(id) from webhook_messages)`);
      const blocker = await pool.connect();
      const truncater = await pool.connect();
      try {
        await blocker.query('begin');
        await blocker.query(`select 1 from ${counts} order by ctid desc limit 1 for update`);
        const fold = mapping.compactCounts(h.runtime.database.db);
        await waitFor(() => waitingOn(pool, `delete from ${counts}`), `the fold of ${counts} waiting for its last delta`);
        const truncate = truncater.query('truncate batch_classes cascade');
        await waitFor(() => waitingOn(pool, 'truncate batch_classes'), 'the truncate waiting for the fold');
        await blocker.query('rollback');
        await Promise.all([fold, truncate]);
      } finally {
        blocker.release();
        truncater.release();
      }
      expect({ counts, ...(await kept(h)) }).toEqual({ counts, ...(await counted(pool)) });
    }
  });

  it('fold and empty on a database that publishes every table (logical replication, change data capture)', async () => {
    // A publication FOR ALL TABLES (a CDC feed, a managed blue/green upgrade) refuses a DELETE on a
    // table without a replica identity: the fold and the truncate triggers must still work there.
    const pool = h.runtime.database.pool;
    await pool.query('truncate batch_classes cascade');
    await pool.query('create publication counts_test_all for all tables');
    try {
      await publishBatches(publishDepsOf(h), events('p', 10, 'inst-p'));
      await pool.query(`update batch_classes set state = 'failed' where batch_id in ('p-0', 'p-1')`);
      await mapping.compactCounts(h.runtime.database.db);
      expect(await kept(h)).toEqual(await counted(pool));
      await pool.query('truncate batch_classes cascade');
      expect(await kept(h)).toEqual(await counted(pool));
    } finally {
      await pool.query('drop publication counts_test_all');
    }
  });

  it('are read from index entries: the oldest wait of each lane never scans the batches', async () => {
    const pool = h.runtime.database.pool;
    await pool.query('truncate batch_classes cascade');
    await pool.query(`
      insert into batch_classes (institute_id, batch_id, class_name, event, state, lane, lane_since)
      select 'inst-' || (g % 5), 'scan-' || g, 'Class ' || g, '{}'::jsonb, (array['pending', 'synced', 'creating'])[1 + g % 3]::batch_state,
             (array['live', 'backfill', 'operator'])[1 + g % 3]::batch_lane, now() - g * interval '1 second'
        from generate_series(1, 20000) g`);
    await pool.query('analyze batch_classes');
    const { sql: text, params } = new PgDialect().sqlToQuery(laneStatsStatement());
    const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`explain (costs off) ${text}`, params);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).not.toMatch(/Seq Scan on batch_classes/);
    expect(plan).toMatch(/batch_classes_live_wait_idx/);
    expect(plan).toMatch(/batch_classes_backfill_wait_idx/);
    expect(plan).toMatch(/batch_classes_under_way_since_idx/);
    const lanes = await mapping.laneStats(h.runtime.database.db);
    const { rows: oldest } = await pool.query<{ s: number }>(
      `select extract(epoch from now() - min(lane_since))::float8 as s from batch_classes where state = 'pending' and lane = 'live'`,
    );
    expect(lanes.live.oldestSeconds).toBeCloseTo(oldest[0]!.s, 0);
    expect(lanes.live.batches).toBeGreaterThan(0);
  });

  it('are summed from their index after a burst of deltas, not from the pages the burst left behind', async () => {
    const pool = h.runtime.database.pool;
    await pool.query('truncate batch_classes cascade');
    await pool.query(`
      insert into batch_classes (institute_id, batch_id, class_name, event, state)
      select 'inst-' || (g % 5), 'burst-' || g, 'Class ' || g, '{}'::jsonb, 'pending' from generate_series(1, 20000) g`);
    // One bulk update: two deltas a row (a retry --failed of many batches does the same).
    await pool.query(`update batch_classes set state = 'failed'`);
    await mapping.compactCounts(h.runtime.database.db);
    await pool.query('vacuum analyze batch_counts');
    const plan = async (text: string) => (await pool.query<{ 'QUERY PLAN': string }>(`explain ${text}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(await plan('select state, sum(n) as n from batch_counts group by state')).toMatch(/Index Only Scan using batch_counts_key_idx/);
    expect((await mapping.countByState(h.runtime.database.db)).failed).toBe(20_000);
  });

  it('start from the rows already there when 0013 is applied to a database that has batches', async () => {
    const { url, client } = await databaseAtMigration(12, defer);
    await client.query(`
      insert into batch_classes (institute_id, batch_id, class_name, event, state, lane)
      select 'inst-' || (g % 3), 'old-' || g, 'Class ' || g, '{}'::jsonb, (array['pending', 'synced', 'failed'])[1 + g % 3]::batch_state, 'backfill'
        from generate_series(1, 300) g`);
    await runMigrations(url);
    const { rows } = await client.query<{ state: string; n: string }>('select state, sum(n) as n from batch_counts group by 1 order by 1');
    expect(rows.map((r) => [r.state, Number(r.n)])).toEqual([
      ['pending', 100],
      ['synced', 100],
      ['failed', 100],
    ]);
  });
});
