// The reads an operator, an API client or a timer makes read about what they return, whatever the
// table holds (#38): a page of batches of a rare state among many synced ones, or of an institute,
// the count of a reconciliation's unread institute, the institutes a batch id is known under or a
// pass reads, and each pruning slice. Each is checked for its rows (against a plain query) and, on
// an analyzed table, for its plan.
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { batchesOfInstitute, batchesOfInstituteStatement } from '../../src/mapping/batches-of-institute.ts';
import { institutesOf, institutesOfStatement } from '../../src/mapping/institutes-of.ts';
import { institutesWithBatches, institutesWithBatchesStatement } from '../../src/mapping/institutes-with-batches.ts';
import { type BatchFilter, listBatches, listBatchesStatement } from '../../src/mapping/list-batches.ts';
import { pruneMessages, pruneMessagesStatement } from '../../src/mapping/outbox/prune-messages.ts';
import { pruneEvents, pruneEventsStatement } from '../../src/mapping/prune-events.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h } = useHarness();
const query = (text: string, values: unknown[] = []) => h.runtime.database.pool.query(text, values);

/** `n` batches of `institute` in `state`, made by SQL: `prefix-1`… (a synced one gets a class, and its webhook message). */
async function rows(institute: string, state: string, prefix: string, n: number): Promise<void> {
  await query(
    `insert into batch_classes (institute_id, batch_id, class_name, event, state, class_id, join_link)
     select $1, $3 || '-' || g, 'Class ' || g, jsonb_build_object('instituteId', $1::text, 'batchId', $3 || '-' || g, 'name', 'Class ' || g, 'subject', 'S', 'extra', '{}'::jsonb),
            $2::batch_state, case when $2 = 'synced' then md5($3 || g) end, case when $2 = 'synced' then 'https://join.example/' || g end
       from generate_series(1, $4::int) g`,
    [institute, state, prefix, n],
  );
}

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** The plan's reads of `table` (scans of it, at any depth), run for real (then rolled back), under `settings`. */
async function readsOf(statement: SQL, table: string, settings: Record<string, string> = {}): Promise<PlanNode[]> {
  const { sql: text, params } = new PgDialect().sqlToQuery(statement);
  const client = await h.runtime.database.pool.connect();
  try {
    await client.query('begin');
    for (const [name, value] of Object.entries(settings)) await client.query(`set local ${name} = ${value}`);
    const { rows: plan } = await client.query(`explain (analyze, format json) ${text}`, params);
    await client.query('rollback');
    return nodesOf(plan[0]['QUERY PLAN'][0].Plan).filter((node) => node['Relation Name'] === table && node['Node Type'] !== 'ModifyTable');
  } finally {
    client.release();
  }
}

/** Rows a plan's reads looked at: those returned plus those a filter dropped, over every loop. */
const rowsRead = (reads: PlanNode[]) =>
  reads.reduce((n, node) => n + (Number(node['Actual Rows']) + Number(node['Rows Removed by Filter'] ?? 0)) * Number(node['Actual Loops']), 0);
const indexesOf = (reads: PlanNode[]) => [...new Set(reads.map((node) => node['Index Name'] ?? node['Node Type']))].sort();

beforeAll(async () => {
  // A long synced history recorded first (of other institutes too, so that the planner chooses as
  // it would on a large table), then what is still to do, and a rare failure or two.
  await rows('big', 'synced', 'old', 20_000);
  for (let i = 0; i < 10; i += 1) await rows(`other-${i}`, 'synced', `other-${i}`, 2_000);
  await rows('big', 'pending', 'wait', 300);
  await rows('small', 'synced', 'small-old', 40);
  await rows('small', 'pending', 'small-wait', 30);
  await rows('small', 'failed', 'small-failed', 3);
  await rows('small', 'abandoned', 'small-gone', 5);
  await rows('big', 'failed', 'big-failed', 2);
  await query('analyze batch_classes');
});

describe('GET /v1/batches: listBatches', () => {
  const filters: [string, BatchFilter][] = [
    ['a common state recorded after the synced ones', { state: 'pending' }],
    ['a rare state', { state: 'failed' }],
    ['an institute', { instituteId: 'small' }],
    ['an institute and a state', { instituteId: 'small', state: 'pending' }],
    ['an institute and a state rare in it, common in the table', { instituteId: 'big', state: 'failed' }],
    ['a scope of institutes, one named twice', { instituteIds: ['small', 'big', 'small'] }],
    ['a scope of institutes and a state', { instituteIds: ['small', 'nobody'], state: 'failed' }],
    ['an institute outside the scope', { instituteId: 'big', instituteIds: ['small'] }],
    ['an empty scope', { instituteIds: [] }],
  ];

  /** What a page must hold: the plain query's rows, in id order. */
  async function expected(filter: BatchFilter): Promise<number[]> {
    const scope = filter.instituteIds === undefined ? null : filter.instituteIds;
    const { rows: found } = await query(
      `select id::float8 as id from batch_classes
        where ($1::batch_state is null or state = $1) and ($2::text is null or institute_id = $2) and ($3::text[] is null or institute_id = any($3))
        order by id`,
      [filter.state ?? null, filter.instituteId ?? null, scope],
    );
    return found.map((r: { id: number }) => r.id);
  }

  it.each(filters)('%s: every row, once, in id order, page after page', async (_name, filter) => {
    const seen: number[] = [];
    let afterId: number | undefined;
    for (let page = 0; page < 100; page += 1) {
      const result = await listBatches(h.runtime.database.db, filter, { limit: 7, afterId });
      seen.push(...result.rows.map((r) => r.id));
      if (result.nextAfterId === null) break;
      afterId = result.nextAfterId;
    }
    const all = await expected(filter);
    // Walking pages of 7 through thousands would take long: the first pages and the last are what differ.
    expect(seen).toEqual(all.slice(0, seen.length));
    if (all.length <= 7 * 100) expect(seen).toEqual(all);
  });

  it.each(filters)('%s: a page reads about the rows it shows, from an index that gives them in id order', async (_name, filter) => {
    const reads = await readsOf(listBatchesStatement(filter, { limit: 20 }), 'batch_classes');
    const byInstitute = filter.instituteId !== undefined || filter.instituteIds !== undefined;
    // The page (21 rows, one to tell whether another follows) and, for institutes, each state's first
    // 21 of each institute: never the 20,000 synced rows a walk of the primary key passed.
    expect(rowsRead(reads)).toBeLessThanOrEqual(byInstitute ? 2 * 9 * 21 + 21 : 21);
    if (byInstitute) expect(indexesOf(reads)).toEqual(['batch_classes_institute_state_id_idx', 'batch_classes_pkey']);
    // A state alone: its rows from an index on the state (for one the statistics say is rare, the
    // planner may take them all from (state, updated_at) and sort them), never the primary key.
    else expect(indexesOf(reads)).toEqual([expect.stringMatching(/^batch_classes_state_(id|updated)_idx$/)]);
  });
  it.each(filters)('%s: the same when the planner judges reading an index dear (as on a table just filled)', async (_name, filter) => {
    // Index reads priced ten times their default: a walk of the primary key, filtering, looks cheap
    // to a plan free to choose it (as one did on a freshly filled table at 300,000 rows).
    const reads = await readsOf(listBatchesStatement(filter, { limit: 20 }), 'batch_classes', { random_page_cost: '40' });
    const byInstitute = filter.instituteId !== undefined || filter.instituteIds !== undefined;
    expect(rowsRead(reads)).toBeLessThanOrEqual(byInstitute ? 2 * 9 * 21 + 21 : 21);
  });
});

describe("a reconciliation's unread institute: batchesOfInstitute", () => {
  it('counts its batches that are not abandoned up to a bound, says when there are more, and names the first', async () => {
    const db = h.runtime.database.db;
    const firstIds = ['small-old-1', 'small-old-2', 'small-old-3'];
    expect(await batchesOfInstitute(db, 'small', 3)).toEqual({ count: 73, more: false, batchIds: firstIds });
    expect(await batchesOfInstitute(db, 'small', 3, 50)).toEqual({ count: 50, more: true, batchIds: firstIds });
    expect(await batchesOfInstitute(db, 'small', 3, 73)).toEqual({ count: 73, more: false, batchIds: firstIds });
    expect(await batchesOfInstitute(db, 'nobody', 3)).toEqual({ count: 0, more: false, batchIds: [] });
  });

  it('reads as far as it counts, not every batch of the institute', async () => {
    const reads = await readsOf(batchesOfInstituteStatement('big', 50, 100), 'batch_classes');
    // 101 counted and 50 named (each state's first 50 at most), of the 20,302 it holds.
    expect(rowsRead(reads)).toBeLessThanOrEqual(101 + 8 * 50 + 50);
    expect(indexesOf(reads)).toEqual(['batch_classes_institute_state_id_idx', 'batch_classes_pkey']);
  });
});

describe('a batch id not known where it was asked for: institutesOf', () => {
  it('names the institutes it is known under, from two index probes an institute', async () => {
    expect(await institutesOf(h.runtime.database.db, 'small-old-7')).toEqual(['small']);
    expect(await institutesOf(h.runtime.database.db, 'nowhere')).toEqual([]);
    const reads = await readsOf(institutesOfStatement('small-old-7'), 'batch_classes');
    // 12 institutes: the next one's name, then the batch under it; not the 24,380 entries of the key
    // (a batch id alone is the key's second column: asked by it, the whole key was read).
    expect(rowsRead(reads)).toBeLessThanOrEqual(3 * 12);
    const keyReads = reads.filter((node) => node['Index Name'] === 'batch_classes_institute_batch_key');
    expect(keyReads.map((node) => node['Index Cond'])).toEqual([expect.stringMatching(/^\(\(institute_id = /)]);
  });
});

describe('the institutes a reconciliation pass reads: institutesWithBatches', () => {
  it('every institute with a batch not abandoned, or abandoned in doubt, from one probe an institute', async () => {
    await rows('gone', 'abandoned', 'gone', 300);
    await rows('doubt', 'abandoned', 'doubt', 300);
    // One of doubt's abandoned batches had its add-class sent, and no class is known: it may have one.
    await query(`update batch_classes set create_sent_at = now() where batch_id = 'doubt-300'`);
    await query('analyze batch_classes');
    const expected = ['big', 'doubt', 'small', ...Array.from({ length: 10 }, (_, i) => `other-${i}`)].sort();
    expect((await institutesWithBatches(h.runtime.database.db)).sort()).toEqual(expected);
    const reads = await readsOf(institutesWithBatchesStatement(), 'batch_classes');
    // 14 institutes, two probes each, and the abandoned rows of the two all abandoned: never the 25,000 rows of the table.
    expect(rowsRead(reads)).toBeLessThanOrEqual(3 * 14 + 2 * 300);
    await query(`delete from batch_classes where institute_id in ('gone', 'doubt')`);
  });
});

describe('pruning', () => {
  it('deletes settled messages past the retention, never a pending one, from the index of settled messages', async () => {
    // The synced rows each wrote a batch.synced message (the outbox trigger): all pending. Half of
    // them delivered, and a fifth of all made old: of those, only the delivered ones go.
    await query(`update webhook_messages set status = 'delivered', delivered_at = now() where id % 2 = 0`);
    await query(`update webhook_messages set occurred_at = now() - interval '40 days' where id % 5 = 0`);
    await query('analyze webhook_messages');
    const { rows: before } = await query(
      `select count(*) filter (where status <> 'pending' and occurred_at < now() - interval '30 days')::int as old, count(*)::int as total from webhook_messages`,
    );
    const reads = await readsOf(pruneMessagesStatement(30 * 86_400_000, 100), 'webhook_messages');
    expect(indexesOf(reads)).toEqual(['webhook_messages_pkey', 'webhook_messages_settled_idx']);
    expect(rowsRead(reads)).toBeLessThanOrEqual(200);

    expect(await pruneMessages(h.runtime.database.db, 30 * 86_400_000, 100)).toBe(before[0].old);
    const { rows: after } = await query(
      `select count(*)::int as total, count(*) filter (where occurred_at < now() - interval '30 days')::int as old from webhook_messages`,
    );
    expect(after[0].total).toBe(before[0].total - before[0].old);
    // The old ones left are the pending ones.
    const { rows: left } = await query(`select distinct status from webhook_messages where occurred_at < now() - interval '30 days'`);
    expect(left).toEqual([{ status: 'pending' }]);
  });

  it('deletes audit rows past the retention a slice at a time, each read from the index by age', async () => {
    await query(`insert into batch_events (batch_row_id, type, at) select id, 'received', now() - (id % 60) * interval '1 day' from batch_classes`);
    await query('analyze batch_events');
    const reads = await readsOf(pruneEventsStatement(30 * 86_400_000, 100), 'batch_events');
    expect(indexesOf(reads)).toEqual(['batch_events_at_idx', 'batch_events_pkey']);
    expect(rowsRead(reads)).toBeLessThanOrEqual(200);
    const { rows: old } = await query(`select count(*)::int as n from batch_events where at < now() - interval '30 days'`);
    expect(await pruneEvents(h.runtime.database.db, 30 * 86_400_000, 100)).toBe(old[0].n);
    const { rows: left } = await query(`select count(*)::int as n from batch_events where at < now() - interval '30 days'`);
    expect(left[0].n).toBe(0);
  });
});
