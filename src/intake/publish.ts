// Accepting batch events: a created batch is recorded, an update or a cancellation is applied to its
// row as it stands (./apply.ts). Either is written to PostgreSQL *before* it is acknowledged, then the
// batch's job is queued; if the queue write fails the batch is still safe (the sweep queues it).
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import type { BatchLane, BatchState, Db } from '../mapping/index.ts';
import { queueLaneOf } from '../sync/lanes.ts';
import { renderClassName } from '../sync/names.ts';
import type { Placement, SyncQueue } from '../sync/queue.ts';
import { applyBatchChange, keyOf, unknownTargets } from './apply.ts';
import { enqueueJobs } from './enqueue-jobs.ts';
import {
  type BatchCreated,
  type BatchCancelledInput,
  type BatchEvent,
  type BatchUpdatedInput,
  type EventType,
  type FieldProblem,
  type IntakeDefaults,
  InvalidEventError,
  parseBatchEvent,
  typeOf,
} from './schema.ts';

export interface PublishDeps {
  db: Db;
  queue: SyncQueue;
  logger: Logger;
  /** Where events without an institute go, the institutes served, and the class name template. */
  defaults: IntakeDefaults & { classNameTemplate: string };
  /** How long to wait for Redis before answering "recorded, not queued yet" (default 2 s). */
  enqueueTimeoutMs?: number;
}

/**
 * recorded   a new batch
 * duplicate  a batch.created for a batch already recorded, with no higher version: nothing changed
 * applied    an update, a cancellation or a newer batch.created was applied
 * stale      its version is not above the last one applied: ignored (the batch's history says so)
 */
export type IntakeOutcome = 'recorded' | 'duplicate' | 'applied' | 'stale';

export interface AcceptedBatch {
  batchId: string;
  instituteId: string;
  type: EventType;
  outcome: IntakeOutcome;
  /** The batch's state after this event. */
  state: BatchState;
  /** True when this batch was already recorded (a re-post is harmless). */
  duplicate: boolean;
  /** False when Redis could not take the job right now; the sweep will enqueue it. */
  queued: boolean;
}

export type PublishOutcome = ({ ok: true } & AcceptedBatch) | { ok: false; index: number; problems: FieldProblem[] };

export interface PublishOptions {
  /**
   * The lane new batches wait in: `live` (default: events as they happen) or `backfill` (history:
   * synced when nothing live waits). A batch already recorded keeps its lane.
   */
  lane?: BatchLane;
}

const CHUNK = 1_000;

/** Validates, records and enqueues one event (`batch.created` unless its `type` says otherwise). Throws InvalidEventError naming each bad field. */
export async function publishBatchCreated(deps: PublishDeps, input: unknown, options: PublishOptions = {}): Promise<AcceptedBatch> {
  const outcome = answerTo(await publishBatches(deps, [input], options), 0, 'publishBatches');
  if (!outcome.ok) throw new InvalidEventError(outcome.problems);
  const { ok: _ok, ...accepted } = outcome;
  return accepted;
}

/** A `batch.updated` event: new name, subject or extra class fields for a batch already recorded. */
export function publishBatchUpdated(deps: PublishDeps, input: BatchUpdatedInput): Promise<AcceptedBatch> {
  return publishBatchCreated(deps, { ...input, type: 'batch.updated' });
}

/** A `batch.cancelled` event: the batch never gets a class, or its class is archived. */
export function publishBatchCancelled(deps: PublishDeps, input: BatchCancelledInput): Promise<AcceptedBatch> {
  return publishBatchCreated(deps, { ...input, type: 'batch.cancelled' });
}

/** Many events at once (any types, applied in order); each valid one is accepted even when others are rejected. Order is kept. */
export async function publishBatches(deps: PublishDeps, inputs: readonly unknown[], options: PublishOptions = {}): Promise<PublishOutcome[]> {
  const outcomes: PublishOutcome[] = new Array(inputs.length);
  const parsedOk: { index: number; event: BatchEvent }[] = [];
  inputs.forEach((input, index) => {
    const parsed = parseBatchEvent(input, deps.defaults);
    if (parsed.ok) parsedOk.push({ index, event: parsed.event });
    else outcomes[index] = { ok: false, index, problems: parsed.problems };
  });
  const refused = await unknownTargets(
    deps.db,
    parsedOk.map((v) => v.event),
  );
  const valid = parsedOk.filter((v, i) => {
    const problems = refused.get(i);
    if (problems) outcomes[v.index] = { ok: false, index: v.index, problems };
    return !problems;
  });
  const accepted = await publishParsed(
    deps,
    valid.map((v) => v.event),
    options,
  );
  valid.forEach((v, i) => {
    outcomes[v.index] = { ok: true, ...answerTo(accepted, i, 'publishParsed') };
  });
  return outcomes;
}

/** `publishBatches` for items that carry more than their event (a file's line number): each item with its event's outcome. */
export async function publishItems<T>(
  deps: PublishDeps,
  items: readonly T[],
  eventOf: (item: T) => unknown,
  options: PublishOptions = {},
): Promise<{ item: T; outcome: PublishOutcome }[]> {
  const outcomes = await publishBatches(deps, items.map(eventOf), options);
  return items.map((item, i) => ({ item, outcome: answerTo(outcomes, i, 'publishBatches') }));
}

/** The answer to input `i` of a step that answers every input, in order; a gap is a bug in that step, never bad input. */
function answerTo<T>(answers: readonly T[], i: number, step: string): T {
  const answer = answers[i];
  if (answer === undefined) throw new Error(`${step} gave no answer for input ${i} (it gave ${answers.length}): it must answer every input, in order`);
  return answer;
}

/**
 * Records and enqueues events already validated by `parseBatchEvent` whose changes name recorded
 * batches (`unknownTargets`; the HTTP API checks both first). Events apply in the order given:
 * consecutive batch.created events are recorded together, each change on its own.
 */
export async function publishParsed(deps: PublishDeps, events: readonly BatchEvent[], options: PublishOptions = {}): Promise<AcceptedBatch[]> {
  const accepted: AcceptedBatch[] = [];
  const lane = options.lane ?? 'live';
  let created: BatchCreated[] = [];
  const flush = async () => {
    // A chunk is recorded while the one before it is queued: PostgreSQL and Redis work side by side.
    // Each chunk is queued after the one before it, and answered in order.
    let queuing: Promise<AcceptedBatch[]> | undefined;
    for (let start = 0; start < created.length; start += CHUNK) {
      const recorded = await recordChunk(deps, created.slice(start, start + CHUNK), lane).catch(async (error: unknown) => {
        await queuing?.catch(() => undefined); // the chunk before ends before this call does, one error reported
        throw error;
      });
      if (queuing) accepted.push(...(await queuing));
      queuing = queueChunk(deps, recorded);
      queuing.catch(() => undefined); // awaited below; until then its failure must not count as unhandled
    }
    if (queuing) accepted.push(...(await queuing));
    created = [];
  };
  for (const event of events) {
    if (!('type' in event)) {
      created.push(event);
      continue;
    }
    await flush();
    accepted.push(await publishChange(deps, event));
  }
  await flush();
  return accepted;
}

async function publishChange(deps: PublishDeps, event: BatchEvent): Promise<AcceptedBatch> {
  const { outcome, row, queued } = await applyBatchChange(deps, event);
  const type = typeOf(event);
  return { batchId: row.batchId, instituteId: row.instituteId, type, outcome, state: row.state, duplicate: type === 'batch.created', queued };
}

type Recorded = { events: BatchCreated[]; results: (AcceptedBatch & { placement: Placement })[] };

async function recordChunk(deps: PublishDeps, events: BatchCreated[], lane: BatchLane): Promise<Recorded> {
  // The row and the first line of its audit trail are written together, by one statement, which
  // also gives each new batch its place in its institute's line in the lane.
  const inserted = await mapping.recordReceived(
    deps.db,
    events.map(({ version, ...event }) => ({ event, version, className: renderClassName(deps.defaults.classNameTemplate, event) })),
    lane,
  );
  const placed = new Map(inserted.map((r) => [keyOf(r), r.position]));
  // A row inserted just now is `pending` (its job is not even queued yet): only batches that were
  // already known need their state read back.
  const known = await currentStates(
    deps.db,
    events.filter((e) => !placed.has(keyOf(e))),
  );
  const seen = new Set<string>();
  const results = events.map((e) => {
    const k = keyOf(e);
    // The first occurrence of a key in this request is "new" if we inserted it; repeats are duplicates.
    const duplicate = !placed.has(k) || seen.has(k);
    seen.add(k);
    const stored = known.get(k);
    const placement: Placement = stored ? { lane: queueLaneOf(stored.lane, stored.state) } : { lane, position: placed.get(k) ?? 0 };
    const outcome: IntakeOutcome = duplicate ? 'duplicate' : 'recorded';
    return {
      batchId: e.batchId,
      instituteId: e.instituteId,
      type: 'batch.created' as const,
      outcome,
      state: stored?.state ?? 'pending',
      duplicate,
      queued: false,
      placement,
    };
  });
  return { events, results };
}

/** Queues a recorded chunk's jobs, then applies the newer values a versioned batch.created brought for a batch recorded before. */
async function queueChunk(deps: PublishDeps, { events, results }: Recorded): Promise<AcceptedBatch[]> {
  await enqueueJobs(deps, results);
  const accepted: AcceptedBatch[] = results.map(({ placement: _placement, ...rest }) => rest);
  // A batch.created with a version, for a batch recorded before it, may carry newer values.
  for (const [i, e] of events.entries()) {
    if (e.version !== undefined && accepted[i]?.duplicate) accepted[i] = await publishChange(deps, e);
  }
  return accepted;
}

async function currentStates(db: Db, events: BatchCreated[]): Promise<Map<string, { state: BatchState; lane: BatchLane }>> {
  const rows = await mapping.statesOf(db, events);
  return new Map(rows.map((r) => [keyOf(r), { state: r.state, lane: r.lane }]));
}
