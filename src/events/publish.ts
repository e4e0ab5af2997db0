// Accepting batch-created events. A batch is written to Postgres *before* it is acknowledged, then
// put on the queue; if the queue write fails the batch is still safe (the sweep enqueues it).
import { and, eq, inArray, or, sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { type BatchState, TERMINAL_STATES, batchClasses } from '../db/schema/index.ts';
import type { Logger } from '../logger.ts';
import { renderClassName } from '../sync/names.ts';
import { type SyncQueue, syncJob } from '../sync/queue.ts';
import { type BatchCreated, type FieldProblem, InvalidEventError, parseBatchCreated } from './schema.ts';

export interface PublishDeps {
  db: Db;
  queue: SyncQueue;
  logger: Logger;
  defaults: { instituteId: string; classNameTemplate: string };
  /** How long to wait for Redis before answering "recorded, not queued yet" (default 2 s). */
  enqueueTimeoutMs?: number;
}

export interface AcceptedBatch {
  batchId: string;
  instituteId: string;
  state: BatchState;
  /** True when this batch was already recorded (a re-post is harmless). */
  duplicate: boolean;
  /** False when Redis could not take the job right now; the sweep will enqueue it. */
  queued: boolean;
}

export type PublishOutcome = ({ ok: true } & AcceptedBatch) | { ok: false; index: number; problems: FieldProblem[] };

const CHUNK = 1_000;

/** Validates, records and enqueues one event. Throws InvalidEventError naming each bad field. */
export async function publishBatchCreated(deps: PublishDeps, input: unknown): Promise<AcceptedBatch> {
  const [outcome] = await publishBatches(deps, [input]);
  if (!outcome!.ok) throw new InvalidEventError(outcome!.problems);
  const { ok: _ok, ...accepted } = outcome!;
  return accepted;
}

/** Many events at once; each valid one is accepted even when others are rejected. Order is kept. */
export async function publishBatches(deps: PublishDeps, inputs: readonly unknown[]): Promise<PublishOutcome[]> {
  const outcomes: PublishOutcome[] = new Array(inputs.length);
  const valid: { index: number; event: BatchCreated }[] = [];
  inputs.forEach((input, index) => {
    const parsed = parseBatchCreated(input, deps.defaults.instituteId);
    if (parsed.ok) valid.push({ index, event: parsed.event });
    else outcomes[index] = { ok: false, index, problems: parsed.problems };
  });
  const accepted = await publishParsed(deps, valid.map((v) => v.event));
  valid.forEach((v, i) => {
    outcomes[v.index] = { ok: true, ...accepted[i]! };
  });
  return outcomes;
}

/** Records and enqueues events already validated by `parseBatchCreated` (the HTTP API validates first). */
export async function publishParsed(deps: PublishDeps, events: readonly BatchCreated[]): Promise<AcceptedBatch[]> {
  const accepted: AcceptedBatch[] = [];
  for (let start = 0; start < events.length; start += CHUNK) accepted.push(...(await recordChunk(deps, events.slice(start, start + CHUNK))));
  return accepted;
}

async function recordChunk(deps: PublishDeps, events: BatchCreated[]): Promise<AcceptedBatch[]> {
  // The row and the first line of its audit trail are written together, by one statement. The
  // columns travel as four array parameters: a multi-row VALUES of 1,000 events built by the query
  // builder cost more CPU than everything else on this path (bench/intake.ts, --profile).
  const inserted = await deps.db.execute<{ institute_id: string; batch_id: string }>(sql`
    with inserted as (
      insert into batch_classes (institute_id, batch_id, class_name, event)
      select institute_id, batch_id, class_name, event::jsonb
        from unnest(${sql.param(events.map((e) => e.instituteId))}::text[], ${sql.param(events.map((e) => e.batchId))}::text[],
                    ${sql.param(events.map((e) => renderClassName(deps.defaults.classNameTemplate, e)))}::text[],
                    ${sql.param(events.map((e) => JSON.stringify(e)))}::text[]) as v(institute_id, batch_id, class_name, event)
      on conflict (institute_id, batch_id) do nothing
      returning id, institute_id, batch_id
    ), audit as (
      insert into batch_events (batch_row_id, type, to_state)
      select id, 'received', 'pending' from inserted
    )
    select institute_id, batch_id from inserted`);
  const fresh = new Set(inserted.rows.map((r) => keyOf({ instituteId: r.institute_id, batchId: r.batch_id })));
  // A row inserted just now is `pending` (its job is not even queued yet): only batches that were
  // already known need their state read back.
  const states = await currentStates(deps.db, events.filter((e) => !fresh.has(keyOf(e))));
  const seen = new Set<string>();
  const results = events.map((e) => {
    const k = keyOf(e);
    // The first occurrence of a key in this request is "new" if we inserted it; repeats are duplicates.
    const duplicate = !fresh.has(k) || seen.has(k);
    seen.add(k);
    return { batchId: e.batchId, instituteId: e.instituteId, state: states.get(k) ?? 'pending', duplicate, queued: false };
  });
  // Re-posting a batch that is not finished re-enqueues it: harmless (one job id per batch), and it
  // heals a batch whose first enqueue failed.
  const queuedKeys = new Set<string>();
  const toQueue = results.filter((r) => {
    const k = keyOf(r);
    if (TERMINAL_STATES.includes(r.state) || queuedKeys.has(k)) return false;
    queuedKeys.add(k);
    return true;
  });
  try {
    await withTimeout(deps.queue.addBulk(toQueue.map((r) => syncJob(r))), deps.enqueueTimeoutMs ?? 2_000);
    for (const r of results) r.queued = queuedKeys.has(keyOf(r));
  } catch (error) {
    deps.logger.warn({ err: error, batches: toQueue.length }, 'batches recorded but not queued (Redis unavailable); the sweep will enqueue them');
  }
  return results;
}

async function currentStates(db: Db, events: BatchCreated[]): Promise<Map<string, BatchState>> {
  if (events.length === 0) return new Map();
  const byInstitute = new Map<string, string[]>();
  for (const e of events) {
    const ids = byInstitute.get(e.instituteId);
    if (ids) ids.push(e.batchId);
    else byInstitute.set(e.instituteId, [e.batchId]);
  }
  const rows = await db
    .select({ instituteId: batchClasses.instituteId, batchId: batchClasses.batchId, state: batchClasses.state })
    .from(batchClasses)
    .where(or(...[...byInstitute].map(([institute, ids]) => and(eq(batchClasses.instituteId, institute), inArray(batchClasses.batchId, ids)))));
  return new Map(rows.map((r) => [keyOf(r), r.state]));
}

/**
 * BullMQ waits for Redis to come back rather than failing; an HTTP caller should not. A late
 * success is harmless (one job id per batch), and the sweep covers a late failure.
 */
async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
  });
  work.catch(() => {});
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function keyOf(k: { instituteId: string; batchId: string }): string {
  return `${k.instituteId}\u0000${k.batchId}`;
}

