// Each waiting batch's place in its institute's line (migrations/0012_lines.sql): intake and the sweep
// place a job from two index entries instead of counting the line. What they promise, however the
// places are made: institutes take turns inside a lane, an institute's batches keep the order they
// arrived in, a line that moved on places a newcomer after what still waits, a queue rebuilt after a
// Redis wipe comes back in the same order, and a sweep of a healthy queue moves nothing.
import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { runBackfills } from '../../src/db/backfills.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { recordReceivedStatement } from '../../src/mapping/record-received.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { priorityOf } from '../../src/sync/lanes.ts';
import { bothQueues } from '../../src/sync/queue.ts';
import { createSweeper, sweepStuckBatches } from '../../src/sync/sweep.ts';
import { type Harness, dropQueueKeys, publishDepsOf } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';

const events = (prefix: string, n: number, instituteId: string) =>
  Array.from({ length: n }, (_, i) => ({ batchId: `${prefix}-${String(i).padStart(3, '0')}`, name: `${prefix} ${i}`, subject: 'Art', instituteId }));

const sweepDeps = (h: Harness) => ({ db: h.runtime.database.db, queue: h.runtime.queue, redis: h.runtime.redis, logger: h.runtime.logger });

/** The background queue's waiting jobs in the order workers will take them: batch ids. */
async function backgroundOrder(h: Harness): Promise<string[]> {
  return (await h.runtime.queue.background.getJobs(['prioritized'], 0, -1, true)).map((job) => job.data.batchId);
}

async function priorityOfBatch(h: Harness, instituteId: string, batchId: string): Promise<number | undefined> {
  for (const queue of bothQueues(h.runtime.queue)) {
    const job = await queue.getJob(jobIdFor({ instituteId, batchId }));
    if (job) return job.opts.priority;
  }
  return undefined;
}

/** Marks batches as started (their add-class sent), as a run would: they leave the line. */
async function start(h: Harness, batchIds: string[]): Promise<void> {
  await h.runtime.database.db.execute(
    sql`update batch_classes set state = 'creating', create_sent_at = now() where batch_id in (${sql.join(
      batchIds.map((id) => sql`${id}`),
      sql`, `,
    )})`,
  );
}

async function lines(h: Harness, instituteId: string): Promise<(number | null)[]> {
  const { rows } = await h.runtime.database.pool.query('select line from batch_classes where institute_id = $1 order by id', [instituteId]);
  return rows.map((r: { line: string | null }) => (r.line === null ? null : Number(r.line)));
}

describe('lines', () => {
  const each = useHarnessPerTest();

  it('institutes take turns, each in the order its batches arrived, across chunks and after part of a line has started', async () => {
    const h = await each.harness();
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('a', 6, 'inst-a'), { lane: 'backfill' });
    await publishBatches(deps, events('b', 2, 'inst-b'), { lane: 'backfill' });
    await publishBatches(deps, events('a2', 2, 'inst-a'), { lane: 'backfill' });
    expect(await backgroundOrder(h)).toEqual(['a-000', 'b-000', 'a-001', 'b-001', 'a-002', 'a-003', 'a-004', 'a-005', 'a2-000', 'a2-001']);
    expect(await lines(h, 'inst-a')).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);

    // Four of institute a's batches start: its line moves on, and a newcomer of b's waits behind
    // a's next two only, not behind all the places a's line ever gave out.
    await start(h, ['a-000', 'a-001', 'a-002', 'a-003']);
    await publishBatches(deps, events('c', 1, 'inst-b'), { lane: 'backfill' });
    await publishBatches(deps, events('a3', 1, 'inst-a'), { lane: 'backfill' });
    expect(await priorityOfBatch(h, 'inst-a', 'a3-000')).toBe(priorityOf('backfill', 4));
    // b still waits with 2 (positions 0 and 1): its newcomer is third in its line.
    expect(await priorityOfBatch(h, 'inst-b', 'c-000')).toBe(priorityOf('backfill', 2));
    // A batch that left the line holds no place in it.
    expect(await lines(h, 'inst-a')).toEqual([null, null, null, null, 4, 5, 6, 7, 8]);
  });

  it('a batch back in pending long after it left does not push newcomers to the back of the lane', async () => {
    const h = await each.harness();
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('old', 3, 'inst-a'));
    await start(h, ['old-000', 'old-001']);
    await publishBatches(deps, events('new', 3, 'inst-a'));
    // old-000 comes back (an operator's retry, an undo): without a line of its own.
    await h.runtime.database.pool.query(`update batch_classes set state = 'pending' where batch_id = 'old-000'`);
    await publishBatches(deps, events('newer', 1, 'inst-a'));
    // Waiting with lines: old-002 (2), new-000..002 (3..5); the newcomer gets line 6, place 4.
    expect(await priorityOfBatch(h, 'inst-a', 'newer-000')).toBe(priorityOf('live', 4));
  });

  it('the same batch twice in one chunk, or again later, takes one place', async () => {
    const h = await each.harness();
    const deps = publishDepsOf(h);
    const [first, second] = events('d', 2, 'inst-a');
    const outcomes = await publishBatches(deps, [first, first, second, first], { lane: 'backfill' });
    expect(outcomes.map((o) => o.ok && o.outcome)).toEqual(['recorded', 'duplicate', 'recorded', 'duplicate']);
    await publishBatches(deps, [second], { lane: 'backfill' });
    expect(await lines(h, 'inst-a')).toEqual([0, 1]);
    expect(await backgroundOrder(h)).toEqual(['d-000', 'd-001']);
  });

  it('batches recorded before lines existed are numbered by migrate ahead of those recorded since, in their order', async () => {
    const h = await each.harness();
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('pre', 5, 'inst-a'), { lane: 'backfill' });
    await publishBatches(deps, events('pre-b', 2, 'inst-b'), { lane: 'backfill' });
    // As an older version recorded them: no line.
    await h.runtime.database.pool.query('update batch_classes set line = null');
    await publishBatches(deps, events('post', 2, 'inst-a'), { lane: 'backfill' });
    // Two rows per step, so the numbering takes several steps.
    const changed = await runBackfills(h.runtime.database.db, undefined, 2);
    expect(changed['lines of waiting batches']).toBe(7);
    const numbered = await lines(h, 'inst-a');
    expect(numbered).toEqual([-5, -4, -3, -2, -1, 0, 1]);
    expect(await lines(h, 'inst-b')).toEqual([-2, -1]);
    // Nothing left: a second migrate changes nothing.
    expect((await runBackfills(h.runtime.database.db))['lines of waiting batches']).toBe(0);
  });
});

describe('the cost of a chunk', () => {
  const each = useHarnessPerTest();

  it("reads each institute's line ends once, from their index, even on a table not yet analyzed", async () => {
    const h = await each.harness();
    for (let chunk = 0; chunk < 3; chunk += 1) {
      const batch = Array.from({ length: 400 }, (_, i) => ({
        batchId: `c${chunk}-${i}`,
        name: `c${chunk} ${i}`,
        subject: 'Art',
        instituteId: `inst-${i % 8}`,
      }));
      await publishBatches(publishDepsOf(h), batch, { lane: 'backfill' });
    }
    const batches = Array.from({ length: 400 }, (_, i) => {
      const event = { instituteId: `inst-${i % 8}`, batchId: `x-${i}`, name: `x ${i}`, subject: 'Art', extra: {} };
      return { event, className: event.name };
    });
    const { sql: text, params } = new PgDialect().sqlToQuery(recordReceivedStatement(batches, 'backfill'));
    const client = await h.runtime.database.pool.connect();
    try {
      await client.query('begin');
      const { rows } = await client.query(`explain (analyze, format json) ${text}`, params);
      await client.query('rollback');
      const reads = scansOf(rows[0]['QUERY PLAN'][0].Plan).filter(
        (node) => node['Relation Name'] === 'batch_classes' && node['Parent Relationship'] !== 'Member',
      );
      // No read of the whole table: not for the duplicates (a hash of every row, before the fix), not for the lines.
      expect(reads.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
      const lineEnds = reads.filter((node) => node['Index Name'] === 'batch_classes_waiting_line_idx');
      // The first and the last of each of the 8 institutes' lines: one index probe each, not one per batch.
      expect(lineEnds.map((node) => node['Actual Loops'])).toEqual([8, 8]);
      // No other index read for them (the lane's whole backfill index, before the fix, once per batch).
      const otherIndexes = reads.filter((node) => String(node['Node Type']).includes('Index') && node['Index Name'] !== 'batch_classes_waiting_line_idx');
      expect(otherIndexes.map((node) => node['Index Name']).filter((name) => name !== 'batch_classes_institute_batch_key')).toEqual([]);
    } finally {
      client.release();
    }
  });
});

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };
const scansOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(scansOf)];

describe('the sweep and the lines', () => {
  const each = useHarnessPerTest();

  it('after a Redis wipe the queue is rebuilt in one pass, in the same order, and the marker is set again', async () => {
    const h = await each.harness();
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('big', 12, 'inst-big'), { lane: 'backfill' });
    await publishBatches(deps, events('small', 3, 'inst-small'), { lane: 'backfill' });
    await publishBatches(deps, events('late', 4, 'inst-big'), { lane: 'backfill' });
    await publishBatches(deps, events('later', 2, 'inst-small'), { lane: 'backfill' });
    // A first pass on a fresh queue sets the marker, finding every job live: nothing queued.
    const sweep = createSweeper(sweepDeps(h), { stuckAfterMs: 0, limit: 4 });
    expect(await sweep()).toMatchObject({ rebuilt: true, examined: 21, requeued: 0 });
    const before = await backgroundOrder(h);
    expect(before.slice(0, 6)).toEqual(['big-000', 'small-000', 'big-001', 'small-001', 'big-002', 'small-002']);

    // Redis loses everything under the prefix (a restart without persistence): the jobs and the marker.
    await dropQueueKeys(h.config.queuePrefix);
    // Pages of 4, but one pass: the rebuild reads every page.
    expect(await sweep()).toMatchObject({ rebuilt: true, requeued: 21 });
    expect(await backgroundOrder(h)).toEqual(before);
    // The marker is back: the next pass is an ordinary one (a page of each tier), and finds nothing to do.
    expect(await sweep()).toEqual({ examined: 4, requeued: 0 });
  });

  it('a queue rebuilt after part of a line started comes back in the order it was in', async () => {
    const h = await each.harness();
    const deps = publishDepsOf(h);
    const sweep = createSweeper(sweepDeps(h), { stuckAfterMs: 0, limit: 100 });
    await sweep();
    await publishBatches(deps, events('a', 4, 'inst-a'), { lane: 'backfill' });
    // Two of a's batches are done (and their jobs with them): a's first waiting is now its third.
    await start(h, ['a-000', 'a-001']);
    await h.runtime.database.pool.query(`update batch_classes set state = 'synced' where batch_id in ('a-000', 'a-001')`);
    for (const id of ['a-000', 'a-001']) await h.runtime.queue.background.remove(jobIdFor({ instituteId: 'inst-a', batchId: id }));
    await publishBatches(deps, events('b', 2, 'inst-b'), { lane: 'backfill' });
    const before = await backgroundOrder(h);
    expect(before).toEqual(['b-000', 'b-001', 'a-002', 'a-003']);
    await dropQueueKeys(h.config.queuePrefix);
    expect(await sweep()).toMatchObject({ rebuilt: true, requeued: 4 });
    expect(await backgroundOrder(h)).toEqual(before);
  });

  it('a sweep of a healthy queue during a long backfill queues nothing and moves no job', async () => {
    const h = await each.harness();
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('x', 8, 'inst-x'), { lane: 'backfill' });
    await publishBatches(deps, events('y', 4, 'inst-y'), { lane: 'backfill' });
    await sweepStuckBatches(sweepDeps(h), { stuckAfterMs: 0 });
    await start(h, ['x-000', 'x-001', 'x-002']);
    const priorities = async () =>
      Promise.all([...events('x', 8, 'inst-x'), ...events('y', 4, 'inst-y')].map((e) => priorityOfBatch(h, e.instituteId, e.batchId)));
    const before = await priorities();
    const pass = await sweepStuckBatches(sweepDeps(h), { stuckAfterMs: 0 });
    expect(pass.requeued).toBe(0);
    // Every waiting batch was looked at (and the three started ones, now ahead), none moved.
    expect(pass.examined).toBe(12);
    expect(await priorities()).toEqual(before);
  });

  it('Redis wiped again while a rebuild is under way: the marker is not set over the lost jobs, and the next pass rebuilds', async () => {
    const h = await each.harness();
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('w', 9, 'inst-w'), { lane: 'backfill' });
    await publishBatches(deps, events('v', 3, 'inst-v'));
    await dropQueueKeys(h.config.queuePrefix);
    // Redis loses its data again once the rebuild's first page is queued (before it reads the second).
    let reads = 0;
    let wiped = false;
    const db = new Proxy(h.runtime.database.db, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== 'execute' || typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          reads += 1;
          if (reads === 2 && !wiped) {
            wiped = true;
            await dropQueueKeys(h.config.queuePrefix);
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    // Rows look freshly touched to an ordinary pass (stuckAfterMs one hour): only a rebuild queues them.
    const sweep = createSweeper({ ...sweepDeps(h), db }, { stuckAfterMs: 3_600_000, limit: 4 });
    await sweep();
    expect(wiped).toBe(true);
    await sweep();
    const missing: string[] = [];
    for (const e of [...events('w', 9, 'inst-w'), ...events('v', 3, 'inst-v')]) {
      if ((await priorityOfBatch(h, e.instituteId, e.batchId)) === undefined) missing.push(e.batchId);
    }
    expect(missing).toEqual([]);
  });

  it('while another worker rebuilds, a sweep does an ordinary pass', async () => {
    const h = await each.harness();
    await publishBatches(publishDepsOf(h), events('z', 3, 'inst-z'));
    for (const queue of bothQueues(h.runtime.queue)) await queue.obliterate({ force: true });
    await h.runtime.redis.set(`${h.config.queuePrefix}:batch-sync:classroom-sync-rebuilding`, 'another worker', 'PX', 60_000);
    const pass = await sweepStuckBatches(sweepDeps(h), { stuckAfterMs: 0 });
    expect(pass.rebuilt).toBeUndefined();
    // The ordinary pass still queues what it reaches.
    expect(pass.requeued).toBe(3);
  });
});
