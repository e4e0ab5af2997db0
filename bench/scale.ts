// Scale: what intake, the sweep, a queue rebuild, `migrate` and the usual reads cost on an empty
// database and on one holding a long backfill (by default 1,000,000 batches waiting and 500,000
// synced, with 10,000,000 audit rows, all made by SQL in a minute or two).
//
//   npm run bench:scale
//   npm run bench:scale -- --waiting 200000 --synced 100000 --events 2000000   # a quicker run
//
// - intake: publishBatches in this process, 1,000 new backfill batches per call (the institutes of
//   the backlog, so each call extends long lines), the median of 10 calls;
// - a sweep pass on a healthy queue (every job live): one page of each tier;
// - a rebuild after a Redis wipe: every waiting batch queued again by one sweep pass, its time and
//   Redis's memory after;
// - migrate with every waiting batch's line to number (as after upgrading to 0012): its time and
//   its longest statement;
// - the reads an operator's tools make: counts by state, lane stats, the first page of a list.
// Each is measured on the empty database first, then on the full one; the PostgreSQL plans of the
// statements that matter are printed and written to bench/RESULTS.md.
import { PgDialect } from 'drizzle-orm/pg-core';
import type { SQL } from 'drizzle-orm';
import type pg from 'pg';
import { loadConfig } from '../src/config/config.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { publishBatches } from '../src/intake/publish.ts';
import { createLogger } from '../src/logging/logger.ts';
import * as mapping from '../src/mapping/index.ts';
import { findStuckStatement } from '../src/mapping/find-stuck.ts';
import { recordReceivedStatement } from '../src/mapping/record-received.ts';
import { createRuntime } from '../src/runtime/runtime.ts';
import { createSweeper } from '../src/sync/sweep.ts';
import { dropQueueKeys } from '../test/helpers/harness.ts';
import { machineAtEnd, machineAtStart, publish, quantile, round } from './support/report.ts';
import { createScratch, numberSetting, publishDepsOf, scratchPool } from './support/scratch.ts';

const CHUNK = 1_000;
const INTAKE_CALLS = 10;

interface Figures {
  intakePerSecond: number;
  sweepPassMs: number;
  countByStateMs: number;
  laneStatsMs: number;
  listPageMs: number;
}

async function main(): Promise<void> {
  const waiting = numberSetting('--waiting', 'BENCH_WAITING', 1_000_000);
  const synced = numberSetting('--synced', 'BENCH_SYNCED', 500_000);
  const events = numberSetting('--events', 'BENCH_AUDIT_ROWS', 10_000_000);
  const institutes = numberSetting('--institutes', 'BENCH_INSTITUTES', 20);
  const machine = machineAtStart();
  const scratch = await createScratch('scale');
  const pool = scratchPool(scratch);
  const config = loadConfig(scratch.env);
  const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
  const instituteIds = Array.from({ length: institutes }, (_, i) => `inst-${i}`);
  let intakeSerial = 0;
  const intake = async () => {
    const timings: number[] = [];
    for (let call = 0; call < INTAKE_CALLS; call += 1) {
      const batch = Array.from({ length: CHUNK }, (_, i) => {
        intakeSerial += 1;
        const n = intakeSerial;
        return { batchId: `new-${n}`, name: `New ${n}`, subject: 'Bench', instituteId: instituteIds[i % institutes] };
      });
      const started = performance.now();
      await publishBatches(publishDepsOf(runtime), batch, { lane: 'backfill' });
      timings.push(performance.now() - started);
    }
    return round(CHUNK / (quantile(timings, 0.5) / 1_000));
  };
  const sweepDeps = { db: runtime.database.db, queue: runtime.queue, redis: runtime.redis, logger: runtime.logger };
  const measure = async (): Promise<Figures> => {
    const intakePerSecond = await intake();
    // The marker is set by the first pass; the timed one is an ordinary pass.
    const sweep = createSweeper(sweepDeps, { stuckAfterMs: 0 });
    await sweep();
    const sweepPassMs = await timed(() => sweep());
    return {
      intakePerSecond,
      sweepPassMs,
      countByStateMs: await timed(() => mapping.countByState(runtime.database.db)),
      laneStatsMs: await timed(() => mapping.laneStats(runtime.database.db)),
      listPageMs: await timed(() => mapping.listBatches(runtime.database.db, { state: 'pending' }, { limit: 100 })),
    };
  };
  try {
    await runtime.queue.waitUntilReady();
    // Warm-up: the first calls pay for compiling and connecting, not for the table's size.
    await intake();
    const empty = await measure();
    console.error(`empty database: ${JSON.stringify(empty)}`);
    const fillMs = await timed(() => fill(pool, { waiting, synced, events, institutes }));
    console.error(`filled in ${round(fillMs / 1_000)} s`);

    // A Redis wipe: every job gone, the marker with them. One pass rebuilds the queue.
    await dropQueueKeys(scratch.queuePrefix);
    const rebuild = await timedWith(() => createSweeper(sweepDeps, { stuckAfterMs: 0 })());
    const redisMemory = /used_memory_human:(\S+)/.exec(await runtime.redis.info('memory'))?.[1] ?? '?';
    console.error(`rebuilt ${rebuild.value.requeued} jobs in ${round(rebuild.ms / 1_000)} s; Redis uses ${redisMemory}`);
    const plans = await explainAll(pool, instituteIds);
    const full = await measure();
    console.error(`full database: ${JSON.stringify(full)}`);
    const migrate = await migrateWithLinesToNumber(pool, scratch.env.DATABASE_URL!);
    report({ waiting, synced, events, institutes, empty, full, rebuild: { ...rebuild.value, ms: rebuild.ms, redisMemory }, migrate, plans, fillMs, machine });
  } finally {
    await runtime.close();
    await pool.end();
    await scratch.drop();
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  return (await timedWith(work)).ms;
}

async function timedWith<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: round(performance.now() - started, 1) };
}

/**
 * The backlog, by SQL: `synced` batches with a class and link, `waiting` backfill batches in
 * their institutes' lines (received an hour ago: every one looks "untouched" to the sweep), and
 * `events` audit rows spread over them.
 */
async function fill(pool: pg.Pool, n: { waiting: number; synced: number; events: number; institutes: number }): Promise<void> {
  const event = (prefix: string) =>
    `jsonb_build_object('instituteId', 'inst-' || (g % ${n.institutes}), 'batchId', '${prefix}-' || g, 'name', 'Class ' || g, 'subject', 'Bench', 'extra', '{}'::jsonb)`;
  await pool.query(`
    insert into batch_classes (institute_id, batch_id, class_name, event, applied_event, state, lane, class_id, join_link, synced_at, updated_at, received_at)
    select 'inst-' || (g % ${n.institutes}), 'synced-' || g, 'Class ' || g, ${event('synced')}, ${event('synced')}, 'synced', 'backfill',
           lpad(to_hex(g), 24, '0'), 'https://join.example/' || g, now() - interval '2 hours', now() - interval '2 hours', now() - interval '3 hours'
      from generate_series(1, ${n.synced}) g`);
  await pool.query(`
    insert into batch_classes (institute_id, batch_id, class_name, event, state, lane, line, updated_at, received_at)
    select 'inst-' || (g % ${n.institutes}), 'waiting-' || g, 'Class ' || g, ${event('waiting')}, 'pending', 'backfill', g / ${n.institutes},
           now() - interval '1 hour', now() - interval '1 hour'
      from generate_series(1, ${n.waiting}) g`);
  const { rows } = await pool.query<{ min: string; max: string }>('select min(id) as min, max(id) as max from batch_classes');
  const [min, max] = [Number(rows[0]!.min), Number(rows[0]!.max)];
  for (let done = 0; done < n.events; done += 1_000_000) {
    const size = Math.min(1_000_000, n.events - done);
    await pool.query(`
      insert into batch_events (batch_row_id, type, operation, outcome, at)
      select ${min} + (g % ${max - min + 1}), 'remote_call', 'addClass', 'ok', now() - (g % 86400) * interval '1 second'
        from generate_series(${done + 1}, ${done + size}) g`);
  }
  await pool.query('analyze batch_classes; analyze batch_events');
}

/** The plans of the statements intake and the sweep make, on the full database (the intake's rolled back). */
async function explainAll(pool: pg.Pool, instituteIds: string[]): Promise<Record<string, string>> {
  const batches = Array.from({ length: CHUNK }, (_, i) => {
    const event = { instituteId: instituteIds[i % instituteIds.length]!, batchId: `explain-${i}`, name: `Explain ${i}`, subject: 'Bench', extra: {} };
    return { event, className: event.name };
  });
  return {
    'intake (1,000 new batches)': await explain(pool, recordReceivedStatement(batches, 'backfill'), true),
    'sweep page (backfill tier)': await explain(pool, findStuckStatement({ stuckAfterMs: 60_000, tier: 'backfill', afterId: 0, limit: 1_000 }), false),
    'sweep page (tier ahead)': await explain(pool, findStuckStatement({ stuckAfterMs: 60_000, tier: 'ahead', afterId: 0, limit: 1_000 }), false),
  };
}

async function explain(pool: pg.Pool, statement: SQL, rollBack: boolean): Promise<string> {
  const { sql: text, params } = new PgDialect().sqlToQuery(statement);
  const client = await pool.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers, costs off) ${text}`, params);
    await client.query(rollBack ? 'rollback' : 'commit');
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    client.release();
  }
}

/**
 * As right after upgrading to 0012 with a backlog: no waiting batch has a line. `migrate` numbers
 * them, a step at a time; meanwhile a writer's statement waits for one step at most (the longest).
 */
async function migrateWithLinesToNumber(pool: pg.Pool, url: string): Promise<{ ms: number; longestStepMs: number; steps: number }> {
  await pool.query(`update batch_classes set line = null, place = null where state = 'pending'`);
  // An upgrade finds the column new and every row as it was; this setup's update left a dead copy of each.
  await pool.query('vacuum analyze batch_classes');
  const steps: number[] = [];
  const watcher = watchLongest(pool, steps);
  const ms = await timed(() => runMigrations(url));
  await watcher.stop();
  return { ms, longestStepMs: round(Math.max(0, ...steps), 1), steps: steps.length };
}

/** Samples pg_stat_activity for the migrate connection's statements: how long each one ran. */
function watchLongest(pool: pg.Pool, into: number[]): { stop(): Promise<void> } {
  let running = true;
  const seen = new Map<string, number>();
  const loop = (async () => {
    while (running) {
      const { rows } = await pool.query<{ started: Date; ms: number }>(
        `select query_start as started, extract(epoch from (now() - query_start)) * 1000 as ms from pg_stat_activity
          where application_name = 'classroom-sync-migrate' and state = 'active' and query like '%batch_classes%'`,
      );
      for (const row of rows) {
        const key = row.started.toISOString();
        seen.set(key, Math.max(seen.get(key) ?? 0, Number(row.ms)));
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      into.push(...seen.values());
    },
  };
}

interface Results {
  waiting: number;
  synced: number;
  events: number;
  institutes: number;
  empty: Figures;
  full: Figures;
  rebuild: { requeued: number; examined: number; ms: number; redisMemory: string };
  migrate: { ms: number; longestStepMs: number; steps: number };
  plans: Record<string, string>;
  fillMs: number;
  machine: ReturnType<typeof machineAtStart>;
}

function report(r: Results): void {
  const ratio = (full: number, empty: number) => round(full / Math.max(empty, 0.1), 2);
  const intakeShare = round(r.full.intakePerSecond / r.empty.intakePerSecond, 2);
  const within2x = (key: keyof Figures) => ({
    figure: `${key}: empty → full (ms)`,
    value: `${r.empty[key]} → ${r.full[key]} (${ratio(r.full[key], r.empty[key])} ×)`,
    goal: '≤ 2 ×',
    met: r.full[key] <= 2 * Math.max(r.empty[key], 1),
  });
  publish({
    bench: 'scale',
    title: `Scale: ${r.waiting.toLocaleString('en')} batches waiting, ${r.synced.toLocaleString('en')} synced, ${r.events.toLocaleString('en')} audit rows`,
    command: 'npm run bench:scale',
    machine: machineAtEnd(r.machine),
    figures: { ...r, plans: undefined },
    rows: [
      {
        figure: 'intake, events a second: empty → full',
        value: `${r.empty.intakePerSecond} → ${r.full.intakePerSecond} (${intakeShare})`,
        goal: '≥ 0.8',
        met: intakeShare >= 0.8,
      },
      within2x('sweepPassMs'),
      within2x('countByStateMs'),
      within2x('laneStatsMs'),
      within2x('listPageMs'),
      {
        figure: 'rebuild after a Redis wipe',
        value: `${r.rebuild.requeued.toLocaleString('en')} jobs in ${round(r.rebuild.ms / 1_000, 1)} s (Redis ${r.rebuild.redisMemory})`,
        goal: '< 300 s',
        met: r.rebuild.ms < 300_000,
      },
      {
        figure: 'migrate numbering every waiting line',
        value: `${round(r.migrate.ms / 1_000, 1)} s; longest statement ${r.migrate.longestStepMs} ms (${r.migrate.steps} seen)`,
      },
      { figure: 'made by SQL in', value: `${round(r.fillMs / 1_000)} s` },
    ],
    notes: [
      `Backlog: ${r.institutes} institutes, their waiting batches in the backfill lane, each line numbered; every row received an hour ago, so each looks untouched to the sweep.`,
      'Intake: publishBatches in this process, 1,000 new backfill batches per call over the same institutes, median of 10 calls; no worker takes the jobs.',
      'Sweep pass: an ordinary pass (one page of 1,000 per tier, every job live). Rebuild: one pass after deleting every Redis key under the queue prefix (a Redis that restarted empty).',
      'Reads: mapping.countByState, mapping.laneStats, and the first page of 100 pending batches (mapping.listBatches), each once.',
      ...Object.entries(r.plans).map(([name, plan]) => `Plan, ${name}:\n\n\`\`\`\n${plan}\n\`\`\``),
    ],
  });
}

await main();
