// bench/scale.ts's report: the JSON line, the table, and the `scale` section of bench/RESULTS.md.
import { type Machine, type Row, machineAtEnd, publish, round } from '../support/report.ts';
import type { TableSize } from './fill.ts';
import type { MigrateFigures } from './migrate.ts';
import type { ReadFigures } from './reads.ts';

export interface Figures extends ReadFigures {
  intakePerSecond: number;
  sweepPassMs: number;
  countByStateMs: number;
  laneStatsMs: number;
  listPageMs: number;
  enqueuePerSecond: number;
  addBulkPerSecond: number;
}

export interface IntakePoint {
  /** Waiting batches made by SQL so far (intake's own come on top). */
  waiting: number;
  perSecond: number;
}

export interface Results {
  waiting: number;
  synced: number;
  events: number;
  institutes: number;
  enqueueEvents: number;
  empty: Figures;
  full: Figures;
  points: IntakePoint[];
  outbox: { pending: number; due: number };
  rebuild: { requeued: number; examined: number; ms: number; redisMemory: string };
  migrate: MigrateFigures;
  /** As the SQL made them, and after the run's own updates (the outbox's, the rebuild's, intake's). */
  sizes: { made: TableSize[]; after: TableSize[] };
  plans: Record<string, string>;
  fillMs: number;
  machine: Machine;
}

const MB = 1024 * 1024;
const n = (x: number) => x.toLocaleString('en');

export function report(r: Results): void {
  publish({
    bench: 'scale',
    title: `Scale: ${n(r.waiting)} batches waiting, ${n(r.synced)} synced, ${n(r.events)} audit rows`,
    command: 'npm run bench:scale',
    machine: machineAtEnd(r.machine),
    figures: { ...r, plans: undefined },
    rows: [...intakeRows(r), ...readRows(r), ...upkeepRows(r)],
    notes: notes(r),
  });
}

function intakeRows(r: Results): Row[] {
  const share = (rate: number) => round(rate / r.empty.intakePerSecond, 2);
  const intakeShare = share(r.full.intakePerSecond);
  const enqueue = (label: string, f: Figures): Row => {
    const ratio = round(f.enqueuePerSecond / f.addBulkPerSecond, 2);
    return {
      figure: `classroom-sync enqueue (whole process) ÷ addBulk, ${label}`,
      value: `${n(f.enqueuePerSecond)} ÷ ${n(f.addBulkPerSecond)} events/s = ${ratio}`,
      goal: '≥ 0.5',
      met: ratio >= 0.5,
    };
  };
  return [
    {
      figure: 'intake, events a second: empty → full',
      value: `${r.empty.intakePerSecond} → ${r.full.intakePerSecond} (${intakeShare})`,
      goal: '≥ 0.8',
      met: intakeShare >= 0.8,
    },
    ...r.points.map((p) => ({ figure: `intake at ${n(p.waiting)} waiting`, value: `${n(p.perSecond)} events/s (${share(p.perSecond)} of empty)` })),
    enqueue('empty', r.empty),
    enqueue('full', r.full),
  ];
}

function readRows(r: Results): Row[] {
  const ratio = (full: number, empty: number) => round(full / Math.max(empty, 0.1), 2);
  const row = (key: Exclude<keyof Figures, 'intakePerSecond' | 'enqueuePerSecond' | 'addBulkPerSecond'>, goal: boolean): Row => ({
    figure: `${key}: empty → full (ms)`,
    value: `${r.empty[key]} → ${r.full[key]} (${ratio(r.full[key], r.empty[key])} ×)`,
    ...(goal ? { goal: '≤ 2 ×', met: r.full[key] <= 2 * Math.max(r.empty[key], 1) } : {}),
  });
  return [
    row('sweepPassMs', true),
    row('countByStateMs', false),
    row('laneStatsMs', false),
    row('statusReadsMs', true),
    row('statusCliMs', true),
    row('scrapeMs', true),
    row('scrapePostgresMs', false),
    row('scrapeRedisMs', false),
    row('listPageMs', true),
    row('listFailedPageMs', true),
    row('listInstitutePageMs', true),
    row('listInstituteStatePageMs', true),
    row('historyMs', false),
    row('batchesOfInstituteMs', false),
    row('claimMs', false),
    row('prunePassMs', false),
  ];
}

function upkeepRows(r: Results): Row[] {
  const m = r.migrate;
  const per = (bytes: number, rows: number) => `${round(((bytes / MB) * 1_000_000) / Math.max(rows, 1))} MB per million rows`;
  return [
    {
      figure: 'rebuild after a Redis wipe',
      value: `${n(r.rebuild.requeued)} jobs in ${round(r.rebuild.ms / 1_000, 1)} s (Redis ${r.rebuild.redisMemory})`,
      goal: '< 300 s',
      met: r.rebuild.ms < 300_000,
    },
    {
      figure: `migrate from before ${m.applied[0]} (${m.applied.join(', ')})`,
      value: `${round(m.ms / 1_000, 1)} s; its SQL migrations one transaction of ${round(m.transactionMs / 1_000, 1)} s, longest statement ${m.longestStatementMs} ms (${m.longestStatement})`,
    },
    {
      figure: 'migrate building the indexes concurrently',
      value: `${m.indexBuilds} indexes in ${round(m.buildsMs / 1_000, 1)} s, the longest ${m.longestBuildMs} ms (writers go on meanwhile)`,
    },
    {
      figure: 'migrate numbering every waiting line',
      value: `${m.numberingSteps} statements, the longest ${m.longestStepMs} ms`,
    },
    {
      figure: 'migrate filling applied_event of every synced batch (as from before 0008)',
      value: `${m.fillSteps} statements seen, the longest ${m.longestFillMs} ms`,
    },
    {
      figure: 'writes to batch_classes during that migrate',
      value: `a one-row update waited at most ${m.writerLongestMs} ms (${n(m.writes)} updates)`,
    },
    ...r.sizes.made.map((s, i) => {
      const after = r.sizes.after[i]!;
      return {
        figure: `${s.table} on disk`,
        value: `${round(s.total / MB)} MB for ${n(s.rows)} rows as made (indexes ${round(s.indexes / MB)} MB): ${per(s.total, s.rows)}; ${round(after.total / MB)} MB for ${n(after.rows)} after the run (${per(after.total, after.rows)})`,
      };
    }),
    { figure: 'made by SQL in', value: `${round(r.fillMs / 1_000)} s` },
  ];
}

function notes(r: Results): string[] {
  return [
    `Backlog: ${r.institutes} institutes, their waiting batches in the backfill lane, each line numbered; every row received an hour ago, so each looks untouched to the sweep. Made in ${r.points.length - 1} steps, each adding its share of synced and waiting batches and audit rows; intake is measured after each.`,
    'Intake: publishBatches in this process, 1,000 new backfill batches per call over the same institutes, median of 10 calls; no worker takes the jobs.',
    `enqueue ÷ addBulk: \`node dist/cli/main.js enqueue --backfill FILE\` of ${n(r.enqueueEvents)} new events of the backlog's institutes (an import's size: the process's start-up, about 0.4 s, is a fifth of a 20,000-event file's time), spawn to exit, and Queue.addBulk of as many jobs (500 per call) on a queue of its own, in turn, twice; medians.`,
    'Sweep pass: an ordinary pass (one page of 1,000 per tier, every job live). Rebuild: one pass after deleting every Redis key under the queue prefix (a Redis that restarted empty).',
    'Reads, each the median of 5 (status --json of 3): countByState, laneStats, and the first page of 100 pending batches (listBatches); `status` as printCounts reads (counts by state and lane stats together, one account) and as the whole `node dist/cli/main.js status --json`; a scrape as refreshScrapeGauges of both sources (PostgreSQL and Redis) then the text rendered; list pages of 100 of a state none has (failed), of an institute, of an institute in a state; readTimeline of a batch of the first intake call; batchesOfInstitute (50 ids, counted up to 1,000); an outbox claim of 50 (then released); a pruning pass at the default retention (30 days: nothing past it, what every pass costs).',
    `Outbox on the full database: the synced batches' messages (the outbox trigger writes one each), half delivered 20 days ago, half pending: ${n(r.outbox.pending)} pending of which ${n(r.outbox.due)} due, the rest waiting for a retry an hour away. Then the counts' deltas are folded and the counts tables vacuumed, twice, as the fleet's folds (each SYNC_SWEEP_EVERY) and autovacuum do in the next two minutes: the fill's bulk updates left one or two delta rows a row (1,000,000 for the outage's 500,000 message updates), and until then a read of the counts reads their pages (a scrape took 15 ms instead of 2.6).`,
    `Migrate: the full database taken back to before ${r.migrate.applied[0]} (the objects of ${r.migrate.applied.join(', ')} dropped, their rows in drizzle.__drizzle_migrations deleted, applied_event emptied on every synced batch as before 0008's backfill, the table vacuumed), then runMigrations; pg_stat_activity sampled every 20 ms, while another connection updates one synced row every 10 ms. drizzle applies the SQL migrations in one transaction: its locks (ADD COLUMN, the triggers, the counts' first fill) hold writes until it commits; then the indexes are built CONCURRENTLY (migrations/late-indexes.sql), and the backfills run a statement of 2,000 rows at a time.`,
    `Sizes: pg_total_relation_size (heap, indexes, TOAST), as the SQL made the rows (analyzed, never updated) and after the run (the outbox's update of every message, the rebuild, intake; dead rows vacuumed but their space kept, as on a live table). Per index, after the run: ${sizesOfIndexes(r.sizes.after)}.`,
    ...Object.entries(r.plans).map(([name, plan]) => `Plan, ${name}:\n\n\`\`\`\n${plan}\n\`\`\``),
  ];
}

const sizesOfIndexes = (sizes: TableSize[]) =>
  sizes
    .map((s) =>
      Object.entries(s.each)
        .map(([name, bytes]) => `${name} ${round(bytes / MB, 1)} MB`)
        .join(', '),
    )
    .join('; ');
