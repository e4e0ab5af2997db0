import { type SQL, sql } from 'drizzle-orm';
import { BATCH_STATES } from '../db/schema/index.ts';
import { type Db, ROW_B, rowsOf } from './sql.ts';
import type { BatchState, MappingRow } from './types.ts';

export interface BatchFilter {
  state?: BatchState | undefined;
  instituteId?: string | undefined;
  /** Only these institutes (an API client's scope); an empty list matches nothing. */
  instituteIds?: readonly string[] | undefined;
  batchIds?: readonly string[] | undefined;
}

export interface PageRequest {
  limit: number;
  afterId?: number | undefined;
}

/**
 * The one paginator: rows in id order after `afterId`, at most `limit`, and the id to continue
 * after (null on the last page). One extra row tells whether another page exists, without count(*).
 * Stable under concurrent inserts: the id is the row's serial.
 */
export async function listBatches(db: Db, filter: BatchFilter, page: PageRequest): Promise<{ rows: MappingRow[]; nextAfterId: number | null }> {
  const rows = await rowsOf(db, listBatchesStatement(filter, page));
  const shown = rows.slice(0, page.limit);
  const last = shown[shown.length - 1];
  return { rows: shown, nextAfterId: rows.length > page.limit && last ? last.id : null };
}

/**
 * A page's statement (`limit` + 1 rows). Every filter a caller can make reads an index in id order,
 * so a page costs about the rows it shows whatever the table holds (a rare state among a million
 * synced rows no longer walks the primary key):
 * - institutes (one, or a client's scope): each institute's first rows of each state asked for,
 *   from batch_classes_institute_state_id_idx (`firstIds`);
 * - a state alone: its rows after the cursor as a range of batch_classes_state_id_idx (as in `keyRange`);
 * - nothing: the primary key;
 * - batch ids (a short list): by the (institute_id, batch_id) key when institutes are named.
 */
export function listBatchesStatement(filter: BatchFilter, page: PageRequest): SQL {
  const n = page.limit + 1;
  const afterId = page.afterId ?? 0;
  const institutes = scopeOf(filter);
  const where: SQL[] = [];
  if (filter.batchIds !== undefined) {
    where.push(sql`b.id > ${afterId} and b.batch_id = any(${sql.param([...filter.batchIds])}::text[])`);
    if (filter.state) where.push(sql`b.state = ${filter.state}::batch_state`);
    if (institutes !== undefined) where.push(sql`b.institute_id = any(${sql.param(institutes)}::text[])`);
  } else if (institutes !== undefined) {
    const ids = firstIds(institutes, filter.state ? [filter.state] : BATCH_STATES, afterId, n);
    return sql`select ${ROW_B} from (${ids}) f join batch_classes b on b.id = f.id order by b.id`;
  } else if (filter.state) {
    const state = sql`${filter.state}::batch_state`;
    return sql`select ${ROW_B} from batch_classes b where (b.state, b.id) > (${state}, ${afterId}::bigint) and b.state <= ${state}
      order by b.state, b.id limit ${n}`;
  } else {
    where.push(sql`b.id > ${afterId}`);
  }
  return sql`select ${ROW_B} from batch_classes b where ${sql.join(where, sql` and `)} order by b.id limit ${n}`;
}

/** The institutes the filter allows (each once; both named: those in both), undefined: every one. */
function scopeOf(filter: BatchFilter): string[] | undefined {
  const { instituteId, instituteIds } = filter;
  if (instituteIds === undefined) return instituteId === undefined ? undefined : [instituteId];
  const scope = [...new Set(instituteIds)];
  if (instituteId === undefined) return scope;
  return scope.includes(instituteId) ? [instituteId] : [];
}

/**
 * The ids of the first `limit` rows after `afterId`, in id order, of these institutes in these
 * states: each (institute, state) pair's first `limit` from batch_classes_institute_state_id_idx
 * (an index-only read of `limit` entries at most, `keyRange`), then the first `limit` of them all.
 * It reads at most institutes × states × `limit` index entries, however many rows they hold.
 */
export function firstIds(institutes: readonly string[], states: readonly BatchState[], afterId: number, limit: number): SQL {
  return sql`select found.id from unnest(${sql.param([...institutes])}::text[]) as i(institute_id)
      cross join unnest(${sql.param([...states])}::batch_state[]) as s(state)
      cross join lateral (select c.id from batch_classes c where ${keyRange(sql`i.institute_id`, sql`s.state`, afterId)} limit ${limit}) found
     order by found.id limit ${limit}`;
}

/**
 * The rows `c` of `institute` in `state` after `afterId`, in id order, written as a range of
 * batch_classes_institute_state_id_idx's key and ordered by the whole key. Written plainly
 * (`institute_id = … and state = … order by id`), PostgreSQL takes the institute and the state as
 * fixed, drops them from the order, and may judge walking the primary key and filtering cheaper,
 * taking the rows as spread evenly over the ids: on a table just filled it walked every row for a
 * state that had none (200 ms for a page at 300,000 rows). As a range, only this index gives the
 * order, and its scan starts at the first row and stops at the page's end or the range's.
 */
export function keyRange(institute: SQL, state: SQL, afterId: number): SQL {
  return sql`(c.institute_id, c.state, c.id) > (${institute}, ${state}, ${afterId}::bigint) and (c.institute_id, c.state) <= (${institute}, ${state})
    order by c.institute_id, c.state, c.id`;
}
