// Reading a harness's batches as the tests need them: one row, many rows, and waiting until they
// come to rest. A batch id without an institute means "in whichever institute holds it"; a batch id
// two institutes hold must be asked for with its institute.
import { asc, inArray } from 'drizzle-orm';
import { type BatchRow, TERMINAL_STATES, batchClasses } from '../../src/db/schema/index.ts';
import { findBatch } from '../../src/mapping/index.ts';
import { type Harness, waitFor } from './harness.ts';

/** The mapping row of `batchId` (under `instituteId` when given); undefined when there is none. */
export async function rowOf(h: Harness, batchId: string, instituteId?: string): Promise<BatchRow | undefined> {
  if (instituteId !== undefined) return findBatch(h.runtime.database.db, { instituteId, batchId });
  const rows = await rowsOf(h, [batchId]);
  if (rows.length > 1) throw new Error(`batch ${batchId} is known under ${rows.length} institutes: pass rowOf its institute`);
  return rows[0];
}

/** Every mapping row in id order, or those of `batchIds` (in any institute). */
export function rowsOf(h: Harness, batchIds?: readonly string[]): Promise<BatchRow[]> {
  const where = batchIds ? inArray(batchClasses.batchId, [...batchIds]) : undefined;
  return h.runtime.database.db.select().from(batchClasses).where(where).orderBy(asc(batchClasses.id));
}

const isTerminal = (row: BatchRow | undefined): row is BatchRow => row !== undefined && TERMINAL_STATES.includes(row.state);
const isSynced = (row: BatchRow | undefined): row is BatchRow => row?.state === 'synced';

/**
 * Which rows the until-all helpers wait for: these batch ids (each must have a row), every row the
 * harness holds once there are exactly `count`, or every row it holds (`'all'`, however many).
 */
export type Rows = readonly string[] | { count: number } | 'all';

/** Waits until `batchId` is at rest (synced, failed, needs_review or abandoned); its row. */
export function untilTerminal(h: Harness, batchId: string, timeoutMs?: number): Promise<BatchRow> {
  return waitFor(async () => until(await rowOf(h, batchId), isTerminal), `${batchId} to finish`, timeoutMs);
}

/** Waits until all `rows` are at rest; those rows. */
export function untilAllTerminal(h: Harness, rows: Rows, timeoutMs?: number): Promise<BatchRow[]> {
  return explained(
    h,
    rows,
    isTerminal,
    waitFor(async () => all(await rowsOf(h, idsOf(rows)), rows, isTerminal), `${listed(rows)} to finish`, timeoutMs),
  );
}

/** Waits until `batchId` is synced (under `instituteId` when given); its row. */
export function untilSynced(h: Harness, batchId: string, options: { instituteId?: string; timeoutMs?: number } = {}): Promise<BatchRow> {
  return waitFor(async () => until(await rowOf(h, batchId, options.instituteId), isSynced), `${batchId} synced`, options.timeoutMs);
}

/** Waits until all `rows` are synced; those rows. */
export function untilAllSynced(h: Harness, rows: Rows, timeoutMs?: number): Promise<BatchRow[]> {
  return explained(
    h,
    rows,
    isSynced,
    waitFor(async () => all(await rowsOf(h, idsOf(rows)), rows, isSynced), `${listed(rows)} synced`, timeoutMs),
  );
}

/** A wait that timed out says which rows were not done yet, in what state and why. */
async function explained(h: Harness, rows: Rows, done: Done, wait: Promise<BatchRow[]>): Promise<BatchRow[]> {
  try {
    return await wait;
  } catch (error) {
    const found = await rowsOf(h, idsOf(rows)).catch(() => []);
    const behind = found.filter((row) => !done(row)).slice(0, 5);
    const detail = behind.map((row) => `${JSON.stringify(row.batchId)} ${row.state} (${row.lastErrorKind ?? '-'}: ${row.lastError ?? '-'})`);
    throw new Error(`${(error as Error).message}; not done: ${detail.join('; ') || 'none found'}`, { cause: error });
  }
}

const idsOf = (rows: Rows) => (rows === 'all' || 'count' in rows ? undefined : rows);
type Done = (row: BatchRow | undefined) => row is BatchRow;
const until = (row: BatchRow | undefined, done: Done) => (done(row) ? row : undefined);
const all = (found: BatchRow[], rows: Rows, done: Done) => (found.length === expected(rows, found) && found.every(done) ? found : undefined);
const expected = (rows: Rows, found: BatchRow[]) => (rows === 'all' ? found.length : 'count' in rows ? rows.count : rows.length);
const listed = (rows: Rows) => {
  if (rows === 'all') return 'every row';
  if ('count' in rows) return `${rows.count} rows, every one`;
  return rows.length <= 5 ? rows.join(', ') : `${rows.length} batches (${rows.slice(0, 3).join(', ')} and ${rows.length - 3} more)`;
};
