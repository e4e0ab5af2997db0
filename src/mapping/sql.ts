// Pieces every statement of the mapping module shares: the select list that returns a whole row
// as `MappingRow`, the audit-trail insert and its trace id, interval parameters, and lists of states.
import { type SQL, fillPlaceholders, getTableColumns, sql } from 'drizzle-orm';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.ts';
import { batchClasses } from '../db/schema/index.ts';
import { currentTraceId } from '../telemetry/trace-id.ts';
import type { AuditEvent, BatchState, MappingRow } from './types.ts';

export type { Db };

/**
 * `b.institute_id as "instituteId", …` for every column of batch_classes, so a raw statement's rows
 * come back shaped as drizzle's select would give them (bigserial id as a number).
 */
export function rowColumns(alias: string, keys?: readonly string[]): SQL {
  const list = Object.entries(getTableColumns(batchClasses))
    .filter(([key]) => keys === undefined || keys.includes(key))
    .map(([key, column]) => `${alias}.${column.name}${column.columnType === 'PgBigSerial53' ? '::float8' : ''} as "${key}"`);
  return sql.raw(list.join(', '));
}

export const ROW_B = rowColumns('b');

/**
 * What a sync write returns: the columns that move as a batch does, not the event or the review (a
 * run already holds those from its lease). Decoding the whole row, jsonb and all, after
 * each of a batch's writes was a measurable share of its cost.
 */
export const PROGRESS_KEYS = [
  'id',
  'instituteId',
  'batchId',
  'className',
  'remoteName',
  'classId',
  'joinLink',
  'state',
  'attempts',
  'lastError',
  'lastErrorKind',
  'receivedAt',
  'createSentAt',
  'createEndedAt',
  'createAckedAt',
  'classCreatedAt',
  'linkEnabledAt',
  'syncedAt',
  'failedAt',
  'updatedAt',
  'revision',
  'appliedRevision',
  'nextClassName',
  'cancelledAt',
  'archivedAt',
  'version',
  // Null once a write released the lease: the run that made it has ended.
  'leaseExpiresAt',
] as const satisfies readonly (keyof MappingRow)[];

export type ProgressRow = Pick<MappingRow, (typeof PROGRESS_KEYS)[number]>;

export const PROGRESS_B = rowColumns('b', PROGRESS_KEYS);

const COLUMNS = Object.entries(getTableColumns(batchClasses));

/**
 * A row selected with `rowColumns`, each value decoded as drizzle's select would decode it (the
 * driver hands raw statements' timestamps over as text).
 */
export function decodeRow(raw: Record<string, unknown>): MappingRow {
  const row: Record<string, unknown> = { ...raw };
  for (const [key, column] of COLUMNS) {
    const value = raw[key];
    if (value !== null && value !== undefined) row[key] = column.mapFromDriverValue(value);
  }
  return row as MappingRow;
}

/** A named value of a run (`sql.placeholder`), filled in when a prepared statement runs. */
export const value = (name: string) => sql.placeholder(name);

/** `ms` milliseconds as an interval: a number, or a `value(name)` of a prepared statement. */
export const interval = (ms: number | ReturnType<typeof value>): SQL => sql`(${ms} * interval '1 millisecond')`;

/** `states` as the items of an SQL list (`state in (${stateList(...)})`), each a typed parameter. */
export const stateList = (states: readonly BatchState[]): SQL =>
  sql.join(
    states.map((state) => sql`${state}::batch_state`),
    sql`, `,
  );

/** Rows of a raw statement that selected `rowColumns`. */
export async function rowsOf(db: Db, statement: SQL): Promise<MappingRow[]> {
  return (await db.execute(statement)).rows.map(decodeRow);
}

const dialect = new PgDialect();

/**
 * A statement of a batch's hot path, compiled by drizzle once, when its module loads: its text, and
 * its parameters with a named placeholder (`sql.placeholder`) where each run's values go.
 */
export interface Prepared {
  /** The prepared statement's name: PostgreSQL parses and plans it once per connection. */
  readonly name: string;
  readonly text: string;
  readonly params: readonly unknown[];
}

export function prepare(name: string, statement: SQL): Prepared {
  const { sql: text, params } = dialect.sqlToQuery(statement);
  return { name, text, params };
}

/**
 * Runs a prepared statement with this run's values. Building each statement's SQL again for every
 * write, and sending its ~1 KB text, were a measurable share of a batch's cost (bench/cost.ts).
 * Errors come back as drizzle's own, so they are classified and redacted like any other failed
 * statement.
 */
export async function runPrepared(db: Db, statement: Prepared, values: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const params = fillPlaceholders(statement.params as unknown[], values);
  try {
    // drizzle(pool) keeps the pool as $client (a transaction has none: a `Db` is never one).
    return (await db.$client.query({ name: statement.name, text: statement.text, values: params })).rows;
  } catch (error) {
    throw new DrizzleQueryError(statement.text, params, error instanceof Error ? error : new Error(String(error)));
  }
}

/**
 * The `trace_id` of an audit row written now, as a text parameter: the trace id of the active span
 * (the HTTP request, the queue job, the library caller's own), null when nothing is traced. Every
 * insert into batch_events takes it from here (or from `eventsJson`, which reads it the same way),
 * called while the statement is built, i.e. inside the request or job that writes.
 */
export const traceIdNow = (): SQL => sql`${currentTraceId() ?? null}::text`;

const EVENT_RECORD = sql.raw(
  'e(at timestamptz, type text, from_state text, to_state text, operation text, http_status int, body_status int, duration_ms int, outcome text, error text, attempt int, worker_id text, class_id text, detail jsonb, trace_id text)',
);

/**
 * The events as one jsonb parameter (the insert then costs one statement, whatever their number),
 * each with the trace id current now (see `traceIdNow`): a run's statements are prepared once, so
 * the trace id travels with its values.
 */
export function eventsJson(events: readonly AuditEvent[]): string {
  const traceId = currentTraceId() ?? null;
  return JSON.stringify(
    events.map((e) => ({
      at: e.at ?? null,
      type: e.type,
      from_state: 'fromState' in e ? (e.fromState ?? null) : null,
      to_state: 'toState' in e ? (e.toState ?? null) : null,
      operation: 'operation' in e ? e.operation : null,
      http_status: 'httpStatus' in e ? e.httpStatus : null,
      body_status: 'bodyStatus' in e ? e.bodyStatus : null,
      duration_ms: 'durationMs' in e ? e.durationMs : null,
      outcome: 'outcome' in e ? e.outcome : null,
      error: e.error ?? null,
      attempt: e.attempt ?? null,
      worker_id: e.workerId ?? null,
      class_id: e.classId ?? null,
      detail: e.detail ?? null,
      trace_id: traceId,
    })),
  );
}

/**
 * `insert into batch_events …` of the events in `events` (a jsonb expression, see `eventsJson`) for
 * the row ids that `rowIds` (a select) yields: used as a CTE beside the state change it explains, so
 * the two are one statement and never disagree.
 */
export function insertEvents(rowIds: SQL, events: SQL): SQL {
  return sql`insert into batch_events (batch_row_id, at, type, from_state, to_state, operation, http_status, body_status, duration_ms, outcome, error, attempt, worker_id, class_id, detail, trace_id)
    select r.id, coalesce(e.at, now()), e.type, e.from_state, e.to_state, e.operation, e.http_status, e.body_status, e.duration_ms, e.outcome, e.error, e.attempt, e.worker_id, e.class_id, e.detail, e.trace_id
      from (${rowIds}) r, jsonb_to_recordset(${events}) as ${EVENT_RECORD}`;
}

/** `(institute_id, batch_id)` pairs as a table `v`, from two array parameters. */
export function keyTable(keys: readonly { instituteId: string; batchId: string }[]): SQL {
  return sql`select unnest(${sql.param(keys.map((k) => k.instituteId))}::text[]) as institute_id, unnest(${sql.param(keys.map((k) => k.batchId))}::text[]) as batch_id`;
}

/** A raw statement whose rows have the shape `T` (its select list names them so). */
export async function execute<T>(db: Db, statement: SQL): Promise<{ rows: T[]; rowCount: number | null }> {
  const result = await db.execute(statement);
  return { rows: result.rows as T[], rowCount: result.rowCount };
}
