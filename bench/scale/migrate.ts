// `migrate` on the full database as an upgrade meets it: the database is taken back to before
// migration 0012 (each later migration's objects dropped and its row in drizzle.__drizzle_migrations
// deleted), then runMigrations applies them again and numbers every waiting line. Meanwhile one
// connection samples what the migrate connection runs, and another writes one row of batch_classes
// again and again: its longest wait is how long an upgrade holds the service's writes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { MIGRATIONS_FOLDER, runMigrations } from '../../src/db/migrate.ts';
import { round } from '../support/report.ts';
import { timed } from './timing.ts';

/** The first migration undone: the upgrade starts from the one before it. */
const FROM = '0012_lines';

/**
 * Each migration from FROM on, undone. A migration added later needs its own here (the benchmark
 * says so rather than measure an upgrade that skips it).
 */
const DOWNS: Record<string, string> = {
  '0012_lines': `
    drop trigger batch_classes_leave_line on batch_classes;
    drop function batch_classes_leave_line();
    drop index batch_classes_waiting_line_idx, batch_classes_ahead_idx, batch_classes_backfill_idx, batch_classes_unlined_idx;
    alter table batch_classes drop column line, drop column place`,
  '0013_counts': `
    drop trigger batch_classes_counts_inserted on batch_classes; drop trigger batch_classes_counts_deleted on batch_classes;
    drop trigger batch_classes_counts_moved on batch_classes; drop trigger batch_classes_counts_truncated on batch_classes;
    drop trigger webhook_messages_counts_inserted on webhook_messages; drop trigger webhook_messages_counts_deleted on webhook_messages;
    drop trigger webhook_messages_counts_moved on webhook_messages; drop trigger webhook_messages_counts_truncated on webhook_messages;
    drop function batch_counts_inserted(), batch_counts_deleted(), batch_counts_moved(), batch_counts_truncated(),
      webhook_message_counts_inserted(), webhook_message_counts_deleted(), webhook_message_counts_moved(), webhook_message_counts_truncated();
    drop table batch_counts, webhook_message_counts;
    drop index batch_classes_live_wait_idx, batch_classes_operator_wait_idx, batch_classes_backfill_wait_idx, batch_classes_under_way_since_idx,
      batch_classes_unapplied_idx, webhook_messages_pending_age_idx, batch_classes_state_id_idx, batch_classes_institute_state_id_idx,
      webhook_messages_settled_idx`,
};

/**
 * As a database upgraded from before 0008's backfill (0.1.0) has them: every synced batch without
 * applied_event, for `migrate` to fill (src/db/backfills.ts), a step at a time.
 */
const BEFORE_BACKFILLS = `update batch_classes set applied_event = null where state = 'synced'`;

export interface MigrateFigures {
  /** The migrations applied again. */
  applied: string[];
  ms: number;
  /** The SQL migrations' transaction: every lock it takes is held until it commits. */
  transactionMs: number;
  /** The longest statement seen, and its first words. */
  longestStatementMs: number;
  longestStatement: string;
  /** The line numbering after it: its statements (each its own transaction) and the longest. */
  numberingSteps: number;
  longestStepMs: number;
  /** The indexes built concurrently after it (migrations/late-indexes.sql): how many, the longest, all together. */
  indexBuilds: number;
  longestBuildMs: number;
  buildsMs: number;
  /** The applied_event backfill after it (classes made before 0008): statements seen, and the longest. */
  fillSteps: number;
  longestFillMs: number;
  /** The longest a one-row update of batch_classes waited while migrate ran. */
  writerLongestMs: number;
  writes: number;
}

export async function migrateFromBefore(pool: pg.Pool, url: string): Promise<MigrateFigures> {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as {
    entries: { idx: number; when: number; tag: string }[];
  };
  const from = journal.entries.find((e) => e.tag === FROM);
  if (!from) throw new Error(`migration ${FROM} is not in the journal`);
  const undone = journal.entries.filter((e) => e.idx >= from.idx);
  const unknown = undone.filter((e) => !(e.tag in DOWNS)).map((e) => e.tag);
  if (unknown.length > 0) throw new Error(`bench/scale/migrate.ts cannot undo ${unknown.join(', ')}: add each one's objects to DOWNS`);
  for (const entry of [...undone].reverse()) await pool.query(DOWNS[entry.tag]!);
  await pool.query(BEFORE_BACKFILLS);
  await pool.query('delete from drizzle.__drizzle_migrations where created_at >= $1', [from.when]);
  // An upgrade finds the tables as they were: no dead row left by the benchmark's own changes.
  await pool.query('vacuum analyze batch_classes');
  await pool.query('vacuum analyze webhook_messages');
  const { rows } = await pool.query<{ id: string }>(`select min(id) as id from batch_classes where state = 'synced'`);
  const watcher = watchMigrate(pool);
  const writer = keepWriting(pool, Number(rows[0]!.id));
  const ms = await timed(() => runMigrations(url));
  const seen = await watcher.stop();
  const writes = await writer.stop();
  const statements = [...seen.statements.values()];
  const longest = statements.reduce((a, b) => (b.ms > a.ms ? b : a), { ms: 0, query: '' });
  const steps = statements.filter((s) => s.query.startsWith('with todo'));
  const fills = statements.filter((s) => s.query.startsWith('with next'));
  // A build's parallel workers show the same statement under pids of their own: one entry a statement.
  const builds = [
    ...statements
      .filter((s) => s.query.startsWith('CREATE INDEX CONCURRENTLY'))
      .reduce((longest, s) => longest.set(s.query, Math.max(longest.get(s.query) ?? 0, s.ms)), new Map<string, number>()),
  ].map(([query, ms]) => ({ query, ms }));
  return {
    applied: undone.map((e) => e.tag),
    ms,
    transactionMs: round(Math.max(0, ...seen.transactions.values()), 1),
    longestStatementMs: round(longest.ms, 1),
    longestStatement: longest.query.replace(/\s+/g, ' ').slice(0, 80),
    numberingSteps: steps.length,
    longestStepMs: round(Math.max(0, ...steps.map((s) => s.ms)), 1),
    indexBuilds: builds.length,
    longestBuildMs: round(Math.max(0, ...builds.map((s) => s.ms)), 1),
    buildsMs: round(
      builds.reduce((sum, s) => sum + s.ms, 0),
      1,
    ),
    fillSteps: fills.length,
    longestFillMs: round(Math.max(0, ...fills.map((s) => s.ms)), 1),
    writerLongestMs: round(Math.max(0, ...writes), 1),
    writes: writes.length,
  };
}

/** Samples pg_stat_activity for the migrate connections: how long each statement and each transaction ran. */
function watchMigrate(pool: pg.Pool): { stop(): Promise<{ statements: Map<string, { ms: number; query: string }>; transactions: Map<string, number> }> } {
  let running = true;
  const statements = new Map<string, { ms: number; query: string }>();
  const transactions = new Map<string, number>();
  const loop = (async () => {
    while (running) {
      const { rows } = await pool.query<{ pid: number; state: string; started: Date; ms: number; xact: Date | null; xactMs: number | null; query: string }>(
        `select pid, state, query_start as started, extract(epoch from (now() - query_start)) * 1000 as ms, xact_start as xact,
                extract(epoch from (now() - xact_start)) * 1000 as "xactMs", query
           from pg_stat_activity where application_name = 'classroom-sync-migrate' and state <> 'idle'`,
      );
      for (const row of rows) {
        const key = `${row.pid} ${row.started.toISOString()}`;
        // A transaction waiting between statements still shows its last one: not counted as running.
        if (row.state === 'active') statements.set(key, { ms: Math.max(statements.get(key)?.ms ?? 0, Number(row.ms)), query: row.query.trim() });
        if (row.xact) {
          const xact = `${row.pid} ${row.xact.toISOString()}`;
          transactions.set(xact, Math.max(transactions.get(xact) ?? 0, Number(row.xactMs)));
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { statements, transactions };
    },
  };
}

/** A writer: the same one-row update of batch_classes, every 10 ms; each one's time (ms). */
function keepWriting(pool: pg.Pool, rowId: number): { stop(): Promise<number[]> } {
  let running = true;
  const times: number[] = [];
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await pool.query('update batch_classes set updated_at = updated_at where id = $1', [rowId]);
      times.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return times;
    },
  };
}
