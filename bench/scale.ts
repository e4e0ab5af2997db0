// Scale: what intake, the sweep, a queue rebuild, `migrate` and the usual reads cost on an empty
// database and on one holding a long backfill (by default 1,000,000 batches waiting and 500,000
// synced, with 10,000,000 audit rows, all made by SQL in a few minutes).
//
//   npm run bench:scale
//   npm run bench:scale -- --waiting 200000 --synced 100000 --events 2000000   # a quicker run
//
// - intake: publishBatches in this process (bench/scale/intake.ts), on the empty table and after
//   each step of the backlog (bench/scale/fill.ts); and the whole `classroom-sync enqueue` process
//   beside BullMQ's addBulk, empty and full (`npm run bench:scale` builds dist/ first);
// - a sweep pass on a healthy queue (every job live): one page of each tier;
// - a rebuild after a Redis wipe: every waiting batch queued again by one sweep pass, its time and
//   Redis's memory after;
// - the reads an operator's tools, the API and the timers make (bench/scale/reads.ts): `status`,
//   a metrics scrape, pages of GET /v1/batches, history, the reconciliation's unread-institute read,
//   an outbox claim, a pruning pass;
// - table and index sizes on the full database;
// - migrate on the full database from before 0012 (bench/scale/migrate.ts): its time, its longest
//   statement and transaction, and how long a writer waits meanwhile.
// Each is measured on the empty database first, then on the full one; the PostgreSQL plans of the
// statements that matter are printed and written to bench/RESULTS.md.
import type pg from 'pg';
import { loadConfig } from '../src/config/config.ts';
import { createLogger } from '../src/logging/logger.ts';
import * as mapping from '../src/mapping/index.ts';
import { findStuckStatement } from '../src/mapping/find-stuck.ts';
import { recordReceivedStatement } from '../src/mapping/record-received.ts';
import { createRuntime } from '../src/runtime/runtime.ts';
import { createSweeper } from '../src/sync/sweep.ts';
import { dropQueueKeys } from '../test/helpers/harness.ts';
import { type Filled, fillStep, outboxAfterOutage, tableSizes } from './scale/fill.ts';
import { createIntake } from './scale/intake.ts';
import { migrateFromBefore } from './scale/migrate.ts';
import { SUBJECT, measureReads, readStatements } from './scale/reads.ts';
import { type Figures, type IntakePoint, report } from './scale/report.ts';
import { explainEach, medianMs, timed, timedWith } from './scale/timing.ts';
import { machineAtStart, round } from './support/report.ts';
import { createScratch, numberSetting, scratchPool } from './support/scratch.ts';

/** Steps the backlog is made in: intake is measured after each. */
const STEPS = 4;

async function main(): Promise<void> {
  const backlog = {
    waiting: numberSetting('--waiting', 'BENCH_WAITING', 1_000_000),
    synced: numberSetting('--synced', 'BENCH_SYNCED', 500_000),
    events: numberSetting('--events', 'BENCH_AUDIT_ROWS', 10_000_000),
    institutes: numberSetting('--institutes', 'BENCH_INSTITUTES', 20),
  };
  const enqueueEvents = numberSetting('--enqueue-events', 'BENCH_ENQUEUE_EVENTS', 100_000);
  const machine = machineAtStart();
  const scratch = await createScratch('scale');
  const addBulkPrefix = `${scratch.queuePrefix}-addbulk`;
  const pool = scratchPool(scratch);
  const runtime = createRuntime(loadConfig(scratch.env), { logger: createLogger({ level: 'silent' }) });
  const instituteIds = Array.from({ length: backlog.institutes }, (_, i) => `inst-${i}`);
  const intake = createIntake(runtime, scratch.env, instituteIds, addBulkPrefix);
  const sweepDeps = { db: runtime.database.db, queue: runtime.queue, redis: runtime.redis, logger: runtime.logger };
  const measure = async (): Promise<Figures> => {
    const intakePerSecond = await intake.rate();
    // The marker is set by the first pass; the timed one is an ordinary pass.
    const sweep = createSweeper(sweepDeps, { stuckAfterMs: 0 });
    await sweep();
    const sweepPassMs = await timed(() => sweep());
    const db = runtime.database.db;
    const countByStateMs = await medianMs(() => mapping.countByState(db));
    const laneStatsMs = await medianMs(() => mapping.laneStats(db));
    const listPageMs = await medianMs(() => mapping.listBatches(db, { state: 'pending' }, { limit: 100 }));
    const reads = await measureReads(runtime, scratch.env);
    // Last: its rows and jobs are the only ones the other figures did not see.
    const enqueue = await intake.enqueueAndAddBulk(enqueueEvents, 2);
    return { intakePerSecond, sweepPassMs, countByStateMs, laneStatsMs, listPageMs, ...reads, ...enqueue };
  };
  try {
    await runtime.queue.waitUntilReady();
    // Warm-up: the first calls pay for compiling and connecting, not for the table's size.
    await intake.rate();
    const empty = await measure();
    console.error(`empty database: ${JSON.stringify(empty)}`);
    const points: IntakePoint[] = [{ waiting: 0, perSecond: empty.intakePerSecond }];
    let filled: Filled = { waiting: 0, synced: 0, events: 0 };
    let fillMs = 0;
    for (let step = 1; step <= STEPS; step += 1) {
      const made = await timedWith(() => fillStep(pool, backlog, filled, step, STEPS));
      [filled, fillMs] = [made.value, fillMs + made.ms];
      points.push({ waiting: filled.waiting, perSecond: await intake.rate() });
      console.error(`step ${step}: ${JSON.stringify(filled)} in ${round(made.ms / 1_000)} s; intake ${points.at(-1)!.perSecond} events/s`);
    }
    const made = await tableSizes(pool);
    const outbox = await outboxAfterOutage(pool);
    // What the fleet does in the two minutes after: each SYNC_SWEEP_EVERY a worker folds the counts'
    // deltas, and autovacuum (the counts tables are a few live rows: it comes at the next naptime)
    // frees the folded ones. The fill's bulk updates left one or two deltas a row (the outage's
    // 250,000 deliveries alone, 500,000), for no worker ran; until two folds and vacuums have gone by,
    // reading the counts reads their pages.
    const folded = await timedWith(async () => {
      let rows = 0;
      for (let pass = 0; pass < 2; pass += 1) {
        rows += await mapping.compactCounts(runtime.database.db);
        await pool.query('vacuum analyze batch_counts, webhook_message_counts');
      }
      return rows;
    });
    console.error(`folded ${folded.value} count rows in ${round(folded.ms)} ms`);

    // A Redis wipe: every job gone, the marker with them. One pass rebuilds the queue.
    await dropQueueKeys(scratch.queuePrefix);
    const rebuild = await timedWith(() => createSweeper(sweepDeps, { stuckAfterMs: 0 })());
    const redisMemory = /used_memory_human:(\S+)/.exec(await runtime.redis.info('memory'))?.[1] ?? '?';
    console.error(`rebuilt ${rebuild.value.requeued} jobs in ${round(rebuild.ms / 1_000)} s; Redis uses ${redisMemory}`);
    const plans = await explainEach(pool, { ...intakeAndSweepStatements(instituteIds), ...readStatements(await rowIdOf(pool)) });
    const full = await measure();
    console.error(`full database: ${JSON.stringify(full)}`);
    const sizes = { made, after: await tableSizes(pool) };
    const migrate = await migrateFromBefore(pool, scratch.env.DATABASE_URL!);
    report({
      ...backlog,
      enqueueEvents,
      empty,
      full,
      points,
      outbox,
      rebuild: { ...rebuild.value, ms: rebuild.ms, redisMemory },
      migrate,
      sizes,
      plans,
      fillMs,
      machine,
    });
  } finally {
    intake.close();
    await runtime.close();
    await pool.end();
    await scratch.drop([addBulkPrefix]);
  }
}

/** The statements intake and the sweep make, on the full database (each run, then rolled back). */
function intakeAndSweepStatements(instituteIds: string[]) {
  const batches = Array.from({ length: 1_000 }, (_, i) => {
    const event = { instituteId: instituteIds[i % instituteIds.length]!, batchId: `explain-${i}`, name: `Explain ${i}`, subject: 'Bench', extra: {} };
    return { event, className: event.name };
  });
  return {
    'intake (1,000 new batches)': recordReceivedStatement(batches, 'backfill'),
    'sweep page (backfill tier)': findStuckStatement({ stuckAfterMs: 60_000, tier: 'backfill', afterId: 0, limit: 1_000 }),
    'sweep page (tier ahead)': findStuckStatement({ stuckAfterMs: 60_000, tier: 'ahead', afterId: 0, limit: 1_000 }),
  };
}

/** The row id of the batch the reads ask about. */
async function rowIdOf(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ id: string }>('select id from batch_classes where institute_id = $1 and batch_id = $2', [
    SUBJECT.instituteId,
    SUBJECT.batchId,
  ]);
  return Number(rows[0]!.id);
}

await main();
