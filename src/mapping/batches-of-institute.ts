import { type SQL, sql } from 'drizzle-orm';
import { BATCH_STATES } from '../db/schema/index.ts';
import { firstIds, keyRange } from './list-batches.ts';
import { type Db, execute } from './sql.ts';

/**
 * Batches of an institute a reconciliation pass could not read are counted this far, no further: a
 * few times the ids the report names. Far above a page, the planner could judge it cheaper to read
 * and sort the institute's every row than to read this many from the index (it did at 10,000).
 */
export const COUNT_UP_TO = 1_000;

const NOT_ABANDONED = BATCH_STATES.filter((state) => state !== 'abandoned');

export interface InstituteBatches {
  /** Its batches that are not abandoned, counted up to `countUpTo`. */
  count: number;
  /** True when it has more than `count` (the count stopped at `countUpTo`). */
  more: boolean;
  /** The first `limit` of their ids, oldest first. */
  batchIds: string[];
}

/**
 * How many batches of the institute are not abandoned, up to `countUpTo`, and the first `limit` of
 * their ids: what a pass says of an institute whose listing failed. Both read an index and stop at
 * what they return (`batchesOfInstituteStatement`), so an institute of a million batches costs what
 * one of a thousand does.
 */
export async function batchesOfInstitute(db: Db, instituteId: string, limit: number, countUpTo = COUNT_UP_TO): Promise<InstituteBatches> {
  const { rows } = await execute<{ total: number; ids: string[] }>(db, batchesOfInstituteStatement(instituteId, limit, countUpTo));
  const total = rows[0]?.total ?? 0;
  return { count: Math.min(total, countUpTo), more: total > countUpTo, batchIds: rows[0]?.ids ?? [] };
}

/**
 * One row: `total`, the batches counted up to one past `countUpTo`, each state's from
 * batch_classes_institute_state_id_idx with a limit (`keyRange`; count(*) over all of them read
 * every one), and `ids`, the first `limit` in id order (`firstIds`).
 */
export function batchesOfInstituteStatement(instituteId: string, limit: number, countUpTo: number): SQL {
  const upTo = countUpTo + 1;
  return sql`select
      (select count(*)::int from (
         select 1 from unnest(${sql.param(NOT_ABANDONED)}::batch_state[]) as s(state)
          cross join lateral (select 1 from batch_classes c where ${keyRange(sql`${instituteId}::text`, sql`s.state`, 0)} limit ${upTo}) c
          limit ${upTo}) n) as total,
      array(select b.batch_id from (${firstIds([instituteId], NOT_ABANDONED, 0, limit)}) f join batch_classes b on b.id = f.id order by b.id) as ids`;
}
