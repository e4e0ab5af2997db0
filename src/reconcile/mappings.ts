// Bulk reads for a pass: every mapping of an institute in one select, and the job states of the few
// rows that might be stuck. No query per class: round trips grow with institutes, not with batches.
import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { type BatchState, TERMINAL_STATES, batchClasses } from '../db/schema/index.ts';
import { jobIdFor } from '../sync/keys.ts';
import type { SyncQueue } from '../sync/queue.ts';

export type Mapping = {
  id: number;
  batchId: string;
  className: string;
  classId: string | null;
  /** True when a join link is stored; the link itself stays in the database. */
  hasLink: boolean;
  state: BatchState;
  /** Not terminal, untouched for longer than the stuck threshold, and no lease held. */
  stale: boolean;
  /** The ClassID was stored so recently that a lagging listing may not show the class yet. */
  recent: boolean;
};

const ms = (value: number) => sql`(${value} * interval '1 millisecond')`;

export async function institutesToReconcile(db: Db, defaultInstituteId: string): Promise<string[]> {
  const rows = await db.selectDistinct({ instituteId: batchClasses.instituteId }).from(batchClasses);
  return [...new Set([defaultInstituteId, ...rows.map((r) => r.instituteId)])];
}

/**
 * Every mapping of the institute in one statement. Plain SQL rather than the query builder: the rows
 * come back as the driver builds them (no second copy of 100k objects), with the flags computed by
 * Postgres against its own clock.
 */
export async function loadMappings(db: Db, instituteId: string, options: { stuckAfterMs: number; graceMs: number }): Promise<Mapping[]> {
  const terminal = sql.join(TERMINAL_STATES.map((s) => sql`${s}`), sql`, `);
  const b = batchClasses;
  const result = await db.execute<Mapping>(sql`
    select ${b.id}::float8 as "id", ${b.batchId} as "batchId", ${b.className} as "className", ${b.classId} as "classId",
           coalesce(${b.joinLink}, '') <> '' as "hasLink",
           ${b.state} as "state",
           (${b.state}::text not in (${terminal})
             and ${b.updatedAt} < now() - ${ms(options.stuckAfterMs)}
             and (${b.leaseExpiresAt} is null or ${b.leaseExpiresAt} < now())) as "stale",
           coalesce(${b.classCreatedAt} > now() - ${ms(options.graceMs)}, false) as "recent"
      from ${b}
     where ${b.instituteId} = ${instituteId}
     order by ${b.id}`);
  return result.rows;
}

const LIVE_STATES = new Set(['active', 'waiting', 'waiting-children', 'delayed', 'prioritized']);

/** Row ids among `rows` whose batch has no live job. Only stale rows are asked about. */
export async function withoutLiveJob(queue: SyncQueue, instituteId: string, rows: readonly Mapping[], concurrency = 32): Promise<Set<number>> {
  const stale = rows.filter((r) => r.stale);
  const result = new Set<number>();
  await eachLimited(stale, concurrency, async (row) => {
    const state = await queue.getJobState(jobIdFor({ instituteId, batchId: row.batchId }));
    if (!LIVE_STATES.has(state)) result.add(row.id);
  });
  return result;
}

/** Runs `fn` over `items`, at most `limit` at a time (commands on one Redis connection pipeline). */
export async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(lanes);
}
