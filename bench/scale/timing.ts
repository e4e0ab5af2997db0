// Timing and plans for bench/scale.ts.
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import { quantile, round } from '../support/report.ts';

export async function timed(work: () => Promise<unknown>): Promise<number> {
  return (await timedWith(work)).ms;
}

export async function timedWith<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: round(performance.now() - started, 1) };
}

/** The median of `runs` timings of `work` (a read: a single one is at the mercy of the machine's load). */
export async function medianMs(work: () => Promise<unknown>, runs = 5): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) times.push(await timed(work));
  return round(quantile(times, 0.5), 1);
}

/** EXPLAIN (ANALYZE, BUFFERS) of `statement`, run for real in a transaction rolled back (or committed: `rollBack` false). */
export async function explain(pool: pg.Pool, statement: SQL, rollBack = true): Promise<string> {
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

/** Each statement's plan, in order. */
export async function explainEach(pool: pg.Pool, statements: Record<string, SQL>): Promise<Record<string, string>> {
  const plans: Record<string, string> = {};
  for (const [name, statement] of Object.entries(statements)) plans[name] = await explain(pool, statement);
  return plans;
}
