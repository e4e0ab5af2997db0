// Live batches never wait behind a backfill: with a backfill running at the rate limit, live
// batches arriving one by one are synced before the backfill's remaining batches (those already
// under way excepted); each batch's lane is stored with it, so a queue rebuilt after a Redis wipe
// puts every job back in its lane; and inside a lane, institutes take turns.
import { describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createRuntime } from '../../src/runtime/runtime.ts';
import type { BatchRow } from '../../src/db/schema/index.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { BACKGROUND_QUEUE, SYNC_QUEUE, bothQueues } from '../../src/sync/queue.ts';
import { laneOfPriority } from '../../src/sync/lanes.ts';
import { createSweeper, sweepStuckBatches } from '../../src/sync/sweep.ts';
import { rowsOf, untilAllSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness, useHarnessPerTest } from '../helpers/use-harness.ts';

/** Background worker slots of the one worker process in the first test (SYNC_BACKGROUND_CONCURRENCY). */
const BACKGROUND_SLOTS = 2;

const events = (prefix: string, n: number, instituteId?: string) =>
  Array.from({ length: n }, (_, i) => ({
    batchId: `${prefix}-${String(i).padStart(3, '0')}`,
    name: `${prefix} class ${i}`,
    subject: 'Art',
    ...(instituteId ? { instituteId } : {}),
  }));

describe('a backfill running at the rate limit', () => {
  const { harness, syncWorker } = useHarnessPerTest();

  it('syncs every live batch before the backfill batches not yet under way', async () => {
    // 900 calls a minute is 5 batches a second: 80 backfill batches take about 16 s.
    const env = { CLASSROOM_RATE_LIMIT_PER_MINUTE: '900', SYNC_CONCURRENCY: '6', SYNC_BACKGROUND_CONCURRENCY: String(BACKGROUND_SLOTS) };
    const h = await harness({ env, sandbox: { faults: { latencyMs: 20 } } });
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('back', 80), { lane: 'backfill' });
    syncWorker(h.runtime);
    await waitFor(async () => (await rowsOf(h)).filter((r) => r.state === 'synced').length >= 10 || undefined, 'the backfill to be running');

    // Live batches arrive one after another while the backfill runs: each once the one before is under way.
    const live: string[] = [];
    for (const event of events('live', 6)) {
      await publishBatches(deps, [event]);
      live.push(event.batchId);
      await waitFor(async () => (await rowsOf(h, [event.batchId]))[0]?.state !== 'pending' || undefined, `${event.batchId} under way`);
    }
    const synced = await untilAllSynced(h, live, 30_000);
    const all = await rowsOf(h);
    const backfill = all.filter((r) => r.lane === 'backfill');
    // The backfill was still going when the last live batch was done: the test saw real contention.
    expect(backfill.filter((r) => r.state !== 'synced').length).toBeGreaterThan(10);
    for (const row of synced) {
      expect(row.lane).toBe('live');
      // Backfill batches whose add-class went out while this live batch waited for its own (without
      // lanes: every backfill job queued ahead of it, dozens). With lanes, only jobs already holding a
      // slot: a backfill job reserves its add-class slot (one ahead at most) before its run and keeps
      // its background worker slot until its batch is done, so at most BACKGROUND_SLOTS of them hold
      // a slot not yet used when the live job asks; plus one whose slot came up while the live job was
      // being picked up, before it asked (seen under a loaded machine).
      const startedMeanwhile = backfill.filter((b) => startedBetween(b, row.receivedAt, row.createSentAt!));
      if (process.env.LANES_DEBUG) console.log(row.batchId, row.syncedAt!.getTime() - row.receivedAt.getTime(), startedMeanwhile.length);
      const explained = `backfill started while ${row.batchId} waited: ${startedMeanwhile.map((b) => b.batchId)}`;
      expect(startedMeanwhile.length, explained).toBeLessThanOrEqual(BACKGROUND_SLOTS + 1);
      // Nothing made it wait behind the backfill's queue: without lanes it would wait for dozens of
      // batches at 5 a second (over 10 s); with them, three calls (well under a second, a few on a
      // loaded machine).
      expect(row.syncedAt!.getTime() - row.receivedAt.getTime(), row.batchId).toBeLessThan(6_000);
    }
  }, 120_000);

  it('after a Redis wipe, the sweep queues every batch again in its own lane', async () => {
    const h = await harness({ env: { CLASSROOM_RATE_LIMIT_PER_MINUTE: '600000' } });
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('wipe-back', 5), { lane: 'backfill' });
    await publishBatches(deps, events('wipe-live', 3));
    // One batch is under way: its add-class was sent before the wipe.
    await h.runtime.database.pool.query(`update batch_classes set state = 'creating', create_sent_at = now() where batch_id = 'wipe-back-000'`);
    for (const queue of bothQueues(h.runtime.queue)) await queue.obliterate({ force: true });
    const swept = await sweepStuckBatches(
      { db: h.runtime.database.db, queue: h.runtime.queue, redis: h.runtime.redis, logger: h.runtime.logger },
      { stuckAfterMs: 0 },
    );
    expect(swept.requeued).toBe(8);
    // Which queue a job is in, its lane, and the lane of its priority.
    const laneOf = async (batchId: string) => {
      const jobId = jobIdFor({ instituteId: h.config.classroom.instituteId, batchId });
      for (const queue of bothQueues(h.runtime.queue)) {
        const job = await queue.getJob(jobId);
        if (job) return [queue.name, job.data.lane, laneOfPriority(job.opts.priority)];
      }
      return [];
    };
    expect(await laneOf('wipe-back-000')).toEqual([SYNC_QUEUE, 'under_way', 'under_way']);
    for (const id of ['wipe-back-001', 'wipe-back-004']) expect(await laneOf(id)).toEqual([BACKGROUND_QUEUE, 'backfill', 'backfill']);
    for (const id of ['wipe-live-000', 'wipe-live-002']) expect(await laneOf(id)).toEqual([SYNC_QUEUE, 'live', 'live']);
  });

  it('jobs lost while the queue marker stayed (an obliterate, failed enqueues): live ones come back first and every one within a few passes', async () => {
    const h = await harness({ env: { CLASSROOM_RATE_LIMIT_PER_MINUTE: '600000' } });
    const deps = publishDepsOf(h);
    // The backfill is older than the live batches: a sweep that took the oldest first would never reach them.
    await publishBatches(deps, events('big-back', 10), { lane: 'backfill' });
    await publishBatches(deps, events('late-live', 4));
    const sweep = createSweeper(
      { db: h.runtime.database.db, queue: h.runtime.queue, redis: h.runtime.redis, logger: h.runtime.logger },
      { stuckAfterMs: 0, limit: 3 },
    );
    // The first pass finds the queue's marker missing and checks every batch (all live: nothing to do).
    expect(await sweep()).toMatchObject({ rebuilt: true, requeued: 0 });
    // An obliterate takes the jobs but not the marker: what is missing is found a page at a time.
    for (const queue of bothQueues(h.runtime.queue)) await queue.obliterate({ force: true });
    const queued = async () => {
      const ids: string[] = [];
      for (const queue of bothQueues(h.runtime.queue)) for (const job of await queue.getJobs(['prioritized', 'waiting'])) ids.push(job.data.batchId);
      return ids;
    };
    expect((await sweep()).requeued).toBe(6);
    expect((await queued()).filter((id) => id.startsWith('late-live'))).toHaveLength(3);
    await sweep();
    expect((await queued()).filter((id) => id.startsWith('late-live'))).toHaveLength(4);
    for (let pass = 0; pass < 3; pass += 1) await sweep();
    expect((await queued()).sort()).toEqual([...events('big-back', 10), ...events('late-live', 4)].map((e) => e.batchId).sort());
  });
});

describe('what a batch costs the shared budget', () => {
  const { harness, syncWorker, defer } = useHarnessPerTest();

  it('three slots per batch in any lane: a lower lane reserves its first call before its run, and that call uses it', async () => {
    const h = await harness({ env: { CLASSROOM_RATE_LIMIT_PER_MINUTE: '6000' } });
    const slots: Record<string, number> = {};
    const runtime = createRuntime(h.config, {
      logger: createLogger({ level: 'silent' }),
      // A call that overslept its slot (a busy machine) takes a fresh one: not a slot of its own.
      onRateLimitReserve: (lane, _account, retake) => {
        if (!retake) slots[lane] = (slots[lane] ?? 0) + 1;
      },
    });
    defer(() => runtime.close());
    syncWorker(runtime);
    const deps = publishDepsOf(runtime);
    await publishBatches(deps, events('cost-back', 12), { lane: 'backfill' });
    await publishBatches(deps, events('cost-live', 8));
    await untilAllSynced(h, { count: 20 }, 30_000);
    // add-class: one backfill or live slot each; edit-class and get-class: under way.
    expect(slots).toEqual({ backfill: 12, live: 8, under_way: 40 });
    expect(h.sandbox.state({ classes: false }).calls.totalCalls).toBe(60);
  });
});

describe('institutes inside a lane', () => {
  const { h } = useHarness();

  it('take turns: a small import is not queued behind all of a large one', async () => {
    const deps = publishDepsOf(h);
    await publishBatches(deps, events('big', 40, 'institute-big'), { lane: 'backfill' });
    await publishBatches(deps, events('small', 5, 'institute-small'), { lane: 'backfill' });
    // The order the background workers will take them in (no worker runs in this file).
    const next = await h.runtime.queue.background.getJobs(['prioritized'], 0, 9, true);
    const first = next.map((job) => job.data.batchId);
    expect(first.filter((id) => id.startsWith('small-'))).toHaveLength(5);
    expect(first.filter((id) => id.startsWith('big-'))).toHaveLength(5);
    // The queue dashboard lists each job by lane, institute and batch.
    for (const job of next) expect(job.name).toBe(`backfill · ${job.data.instituteId} · ${job.data.batchId}`);
    // A queue rebuilt by the sweep (Redis lost its jobs) interleaves them the same way.
    await h.runtime.queue.background.obliterate({ force: true });
    await sweepStuckBatches({ db: h.runtime.database.db, queue: h.runtime.queue, redis: h.runtime.redis, logger: h.runtime.logger }, { stuckAfterMs: 0 });
    const swept = await h.runtime.queue.background.getJobs(['prioritized'], 0, 9, true);
    expect(swept.map((job) => job.data.batchId).filter((id) => id.startsWith('small-'))).toHaveLength(5);
    // Live work waits in a queue of its own, served by workers of its own.
    await publishBatches(deps, events('now', 1, 'institute-small'));
    const live = await h.runtime.queue.getJobs(['prioritized'], 0, 9, true);
    expect(live.map((job) => job.data.batchId)).toEqual(['now-000']);
  });
});

function startedBetween(row: BatchRow, from: Date, to: Date): boolean {
  return row.createSentAt !== null && row.createSentAt > from && row.createSentAt < to;
}
