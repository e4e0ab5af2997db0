// Postgres is the source of truth; Redis only holds work in flight. If Redis loses jobs (restart
// without persistence, eviction, a failed enqueue after the row was written), this puts every
// unfinished batch that has no live job back on the queue.
//
// A pass looks at one page of each tier, from where the last pass stopped (keyset on the row id),
// so its cost is the page's, however many batches wait. After a Redis wipe (the queue's marker key
// is gone) one worker rebuilds the whole queue in one go, page after page, in the order the
// batches were recorded, each in its lane and place; then it sets the marker again.
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import type { Redis } from '../redis/connection.ts';
import { type BatchKey, jobIdFor } from './keys.ts';
import { laneOfPriority, queueLaneOf } from './lanes.ts';
import type { Queue } from 'bullmq';
import { type Placement, SYNC_QUEUE, type SyncQueue, bothQueues, queueFor, syncJob } from './queue.ts';

const LIVE_STATES = new Set(['active', 'waiting', 'waiting-children', 'delayed', 'prioritized']);
/** How many batches of a page are looked up in Redis at once. */
const AT_ONCE = 100;
/** How long a rebuilding worker holds the rebuild (renewed every page); another takes over after it. */
const REBUILD_HOLD_MS = 60_000;

export interface SweepResult {
  examined: number;
  requeued: number;
  /** True when this pass rebuilt the whole queue (its marker was missing: Redis lost its data). */
  rebuilt?: boolean;
}

export interface SweepDeps {
  db: mapping.Db;
  queue: SyncQueue;
  /** The queue's Redis: where its marker is kept. */
  redis: Redis;
  logger: Logger;
}

export interface SweepOptions {
  stuckAfterMs: number;
  /** How many batches of each tier one pass looks at (default 1,000). */
  limit?: number;
}

const TIERS: readonly mapping.StuckTier[] = ['ahead', 'backfill'];

/**
 * A sweep that remembers where it stopped: each pass looks at the next `limit` batches of each tier
 * (batches under way, live and operator work; then the backfill), and starts a tier over once it
 * reached its end. So with more unfinished batches than one pass looks at, every one is reached in a
 * few passes, and a backfill of any size never keeps the sweep from live batches. When the queue's
 * marker is missing, the pass rebuilds the whole queue instead (one worker of the fleet at a time).
 */
export function createSweeper(deps: SweepDeps, options: SweepOptions): () => Promise<SweepResult> {
  const limit = options.limit ?? 1_000;
  const after: Record<mapping.StuckTier, number> = { ahead: 0, backfill: 0 };
  const marker = queueMarker(deps.redis, deps.queue);
  return async () => {
    if (!(await marker.present()) && (await marker.claimRebuild())) return rebuild(deps, marker, limit);
    const total: SweepResult = { examined: 0, requeued: 0 };
    for (const tier of TIERS) {
      const rows = await mapping.findStuck(deps.db, { stuckAfterMs: options.stuckAfterMs, tier, afterId: after[tier], limit });
      after[tier] = rows.length < limit ? 0 : (rows.at(-1)?.id ?? 0);
      total.examined += rows.length;
      total.requeued += await requeuePage(deps, rows);
    }
    if (total.requeued > 0) deps.logger.warn(total, 'sweep re-enqueued batches that had no live job');
    return total;
  };
}

/** One pass from the start of each tier (a sweeper of its own). */
export function sweepStuckBatches(deps: SweepDeps, options: SweepOptions): Promise<SweepResult> {
  return createSweeper(deps, options)();
}

/**
 * Every unfinished batch without a live job back on the queue: the tier ahead first, then the
 * backfill, each in the order recorded. Rows touched a moment ago count too: after a wipe nothing
 * they had queued is left. Memory stays one page.
 */
async function rebuild(deps: SweepDeps, marker: QueueMarker, limit: number): Promise<SweepResult> {
  const total: SweepResult = { examined: 0, requeued: 0, rebuilt: true };
  const startedAt = Date.now();
  for (const tier of TIERS) {
    for (let afterId = 0; ; ) {
      const rows = await mapping.findStuck(deps.db, { stuckAfterMs: 0, tier, afterId, limit });
      total.examined += rows.length;
      total.requeued += await requeuePage(deps, rows);
      // The claim gone (Redis lost its data again mid-rebuild, or it ran out and another worker took
      // over): what this rebuild queued may be gone with it, so it sets no marker; a later pass rebuilds.
      if (!(await marker.holdRebuild())) return abandoned(deps, total, startedAt);
      if (rows.length < limit) break;
      afterId = rows.at(-1)?.id ?? 0;
    }
  }
  if (!(await marker.set())) return abandoned(deps, total, startedAt);
  const level = total.requeued > 0 ? 'warn' : 'info';
  deps.logger[level]({ ...total, ms: Date.now() - startedAt }, 'queue rebuilt from PostgreSQL: its marker was missing (first start, or Redis lost its data)');
  return total;
}

function abandoned(deps: SweepDeps, total: SweepResult, startedAt: number): SweepResult {
  deps.logger.warn(
    { examined: total.examined, requeued: total.requeued, ms: Date.now() - startedAt },
    'queue rebuild stopped: its claim is gone (Redis lost its data again, or another worker took over); the queue is rebuilt again',
  );
  return { examined: total.examined, requeued: total.requeued };
}

/**
 * Requeues each row of a page that has no live job; returns how many it queued. Each row's job is
 * looked up once in both queues, `AT_ONCE` rows at a time. After a wipe nearly every row has none,
 * and those are added in bulk, in the page's order; a row whose job exists is dealt with as `requeue`
 * deals with it (live, finished or failed, in which lane).
 */
async function requeuePage(deps: SweepDeps, rows: readonly mapping.Requeueable[]): Promise<number> {
  const placed = rows.map((row) => ({ row, placement: { lane: queueLaneOf(row.lane, row.state), position: row.position } }));
  const found: JobStates[] = [];
  for (let start = 0; start < placed.length; start += AT_ONCE) {
    found.push(...(await Promise.all(placed.slice(start, start + AT_ONCE).map(({ row }) => jobStates(deps.queue, jobIdFor(row))))));
  }
  const none = (i: number) => found[i]?.every(([, state]) => state === 'unknown') ?? false;
  const missing = placed.filter((_, i) => none(i));
  for (const queue of bothQueues(deps.queue)) {
    const jobs = missing.filter(({ placement }) => queueFor(deps.queue, placement.lane) === queue).map(({ row, placement }) => syncJob(row, placement));
    // An id taken meanwhile (intake, another sweep) is left as it is: BullMQ adds no second job under it.
    if (jobs.length > 0) await queue.addBulk(jobs);
  }
  const present = placed.flatMap((entry, i) => (none(i) ? [] : [{ ...entry, states: found[i] ?? [] }]));
  let requeued = missing.length;
  for (let start = 0; start < present.length; start += AT_ONCE) {
    const slice = present.slice(start, start + AT_ONCE);
    const queued = await Promise.all(slice.map(({ row, placement, states }) => requeueGiven(deps.queue, row, placement, states, { reorderInLane: false })));
    requeued += queued.filter(Boolean).length;
  }
  return requeued;
}

export interface RequeueOptions {
  /**
   * Whether a live job waiting behind `placement` inside its lane is moved up to it (default true:
   * an operator's retry). The sweep moves a job only to an earlier lane: places inside a lane shift
   * as the line moves, and a waiting job is already where intake put it.
   */
  reorderInLane?: boolean;
}

/** A batch's job's state in each queue ('unknown' where it has none). */
type JobStates = readonly (readonly [Queue, string])[];

function jobStates(queue: SyncQueue, jobId: string): Promise<JobStates> {
  return Promise.all(bothQueues(queue).map(async (q) => [q, await q.getJobState(jobId)] as const));
}

/**
 * Puts a batch back on the queue of its lane, in its place (lane and position), unless a live job
 * already exists in either queue: one in the target queue is moved up to the place if it waits
 * behind it. Returns true when it queued one.
 */
export async function requeue(queue: SyncQueue, key: BatchKey, placement: Placement, options: RequeueOptions = {}): Promise<boolean> {
  return requeueGiven(queue, key, placement, await jobStates(queue, jobIdFor(key)), options);
}

/** `requeue`, with its job's states already read. */
async function requeueGiven(queue: SyncQueue, key: BatchKey, placement: Placement, states: JobStates, options: RequeueOptions): Promise<boolean> {
  const jobId = jobIdFor(key);
  const target = queueFor(queue, placement.lane);
  const job = syncJob(key, placement);
  const reorder = options.reorderInLane ?? true;
  if (states.some(([, state]) => LIVE_STATES.has(state))) {
    if (LIVE_STATES.has(states.find(([q]) => q === target)?.[1] ?? 'unknown')) await raisePriority(target, jobId, job.opts.priority, reorder);
    return false;
  }
  const failedHere = states.find(([q, state]) => q === target && state === 'failed');
  if (failedHere) {
    const failed = await target.getJob(jobId);
    if (failed) {
      await failed.retry('failed', { resetAttemptsMade: true });
      await raisePriority(target, jobId, job.opts.priority, true);
      return true;
    }
  }
  // A finished job of this batch, in either queue, would keep the id from being used again.
  for (const [q, state] of states) if (state === 'completed' || state === 'failed') await q.remove(jobId);
  await target.add(job.name, job.data, job.opts);
  return true;
}

/** Moves a queued job up to `priority` if it waits behind it (never down: it may be under way); with `inLane` false, only from a later lane. */
async function raisePriority(queue: Queue, jobId: string, priority: number, inLane: boolean): Promise<void> {
  const job = await queue.getJob(jobId);
  const current = job?.opts.priority ?? 0;
  if (!job || current <= priority) return;
  if (inLane || laneOfPriority(current) !== laneOfPriority(priority)) await job.changePriority({ priority });
}

interface QueueMarker {
  present(): Promise<boolean>;
  /** True when this worker may rebuild now (no other one is). */
  claimRebuild(): Promise<boolean>;
  /** Renews this worker's claim; false when it is gone (a wipe, or it ran out and another worker holds it). */
  holdRebuild(): Promise<boolean>;
  /** Sets the marker and lets the claim go, only while the claim is still this worker's; false otherwise. */
  set(): Promise<boolean>;
}

// The claim is checked and acted on in one script: a wipe (or another worker's claim) between a
// check and a write could otherwise set the marker over jobs that are gone. Both keys share the
// queue's prefix (its {hash tag} on a cluster), so one slot.
const HOLD_IF_MINE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const SET_IF_MINE = `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[2], ARGV[2]); redis.call('del', KEYS[1]); return 1 else return 0 end`;

/**
 * A key beside the sync queue's own (a wipe of Redis takes it with the jobs; an obliterate of the queue does not) that says
 * the queue was built from PostgreSQL; and the short-lived claim of the worker rebuilding it.
 */
function queueMarker(redis: Redis, queue: SyncQueue): QueueMarker {
  const base = `${queue.opts.prefix ?? 'bull'}:${SYNC_QUEUE}`;
  const builtKey = `${base}:classroom-sync-built`;
  const rebuildKey = `${base}:classroom-sync-rebuilding`;
  const token = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  return {
    present: async () => (await redis.exists(builtKey)) === 1,
    claimRebuild: async () => (await redis.set(rebuildKey, token, 'PX', REBUILD_HOLD_MS, 'NX')) === 'OK',
    holdRebuild: async () => Number(await redis.eval(HOLD_IF_MINE, 1, rebuildKey, token, REBUILD_HOLD_MS)) === 1,
    set: async () => Number(await redis.eval(SET_IF_MINE, 2, rebuildKey, builtKey, token, new Date().toISOString())) === 1,
  };
}
