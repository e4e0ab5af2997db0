// The batch API: integrators post batch events (created, updated, cancelled) and read back mappings.
//
// A posted array is all-or-nothing: if any event is invalid the answer is 400 listing every
// problem (by index and field) and nothing is recorded. Accepting the valid part would force every
// client to parse per-item results to learn what to resend; since re-posting is harmless (one row
// and one job per batch), "fix and resend the whole array" is the simplest correct client.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findBatch, institutesOf, readTimeline, viewOf } from '../read-model/index.ts';
import { type ApiClient, may, reaches } from '../access/roles.ts';
import type { Db } from '../db/client.ts';
import { unknownTargets } from '../intake/apply.ts';
import { type PublishDeps, publishParsed } from '../intake/publish.ts';
import { type BatchEvent, type FieldProblem, type IntakeDefaults, parseBatchEvent } from '../intake/schema.ts';
import type { BatchKey } from '../sync/keys.ts';
import { forbidden } from './auth.ts';
import { type Problem, batchIdParamSchema, listMappings, listQuerySchema, oneQuerySchema, problemsOf } from './batch-query.ts';
import { clientOf, listScope, outsideOf, publishOutside } from './scope.ts';

export const MAX_EVENTS_PER_POST = 1_000;

export interface BatchRoutesDeps {
  publish: PublishDeps;
  /** Used when a read names no `instituteId`. */
  defaultInstituteId: string;
  /** Largest accepted request body for POST /v1/batches. */
  bodyLimitBytes: number;
}

export function registerBatchRoutes(app: FastifyInstance, deps: BatchRoutesDeps): void {
  registerPublishRoute(app, deps);
  registerReadRoutes(app, deps);
}

function registerPublishRoute(app: FastifyInstance, deps: BatchRoutesDeps): void {
  const { db } = deps.publish;
  app.post('/v1/batches', { bodyLimit: deps.bodyLimitBytes }, async (request, reply) => {
    const client = clientOf(request);
    if (!may(client, 'publish')) return forbidden(reply, client, 'publish');
    const body = request.body;
    const isArray = Array.isArray(body);
    const events: unknown[] = isArray ? body : [body];
    const problems = isArray ? arrayProblems(events) : [];
    const parsed = problems.length === 0 ? parseEvents(events, isArray, deps.publish.defaults) : { valid: [], problems: [] };
    problems.push(...parsed.problems);
    // Before anything is read about the batches: a client learns nothing of another institute's.
    const outside = problems.length === 0 ? outsideOf(client, parsed.valid.map(instituteOfEvent)) : [];
    if (outside.length > 0) return publishOutside(reply, client, outside);
    if (problems.length === 0) problems.push(...unknownProblems(await unknownTargets(db, parsed.valid), isArray));
    if (problems.length > 0) return badRequest(reply, problems, 'nothing was accepted; fix these and post again (re-posting is harmless)');

    // Parsed once: the events recorded are the ones validated above.
    const batches = await publishParsed(deps.publish, parsed.valid);
    const stale = batches.filter((b) => b.outcome === 'stale').length;
    request.log.info({ accepted: batches.length, duplicates: batches.filter((b) => b.duplicate).length, stale }, 'batches accepted');
    return reply.code(202).send({ batches });
  });
}

const instituteOfEvent = (event: BatchEvent): string => event.instituteId;

function registerReadRoutes(app: FastifyInstance, deps: BatchRoutesDeps): void {
  const { db } = deps.publish;
  app.get('/v1/batches/:batchId', async (request, reply) => {
    const key = batchKeyOf(request, reply, deps.defaultInstituteId);
    if (!key) return reply;
    const client = clientOf(request);
    const row = reaches(client, key.instituteId) ? await findBatch(db, key) : undefined;
    return row ? viewOf(row) : notFound(reply, db, client, key);
  });

  app.get('/v1/batches/:batchId/events', async (request, reply) => {
    const key = batchKeyOf(request, reply, deps.defaultInstituteId);
    if (!key) return reply;
    const client = clientOf(request);
    const events = reaches(client, key.instituteId) ? await readTimeline(db, key) : undefined;
    return events ? { ...key, events } : notFound(reply, db, client, key);
  });

  app.get('/v1/batches', async (request, reply) => {
    const query = listQuerySchema.safeParse(request.query);
    if (!query.success) return badRequest(reply, problemsOf(query.error));
    const page = await listMappings(db, query.data, listScope(clientOf(request), query.data.instituteId));
    return { items: page.rows.map(viewOf), nextCursor: page.nextCursor };
  });
}

/** The batch a one-batch route names, or undefined after answering 400 naming every bad part. */
function batchKeyOf(request: FastifyRequest, reply: FastifyReply, defaultInstituteId: string): BatchKey | undefined {
  const params = batchIdParamSchema.safeParse(request.params);
  const query = oneQuerySchema.safeParse(request.query);
  if (!params.success || !query.success) {
    badRequest(reply, [...(params.success ? [] : problemsOf(params.error)), ...(query.success ? [] : problemsOf(query.error))]);
    return undefined;
  }
  return { batchId: params.data.batchId, instituteId: query.data.instituteId ?? defaultInstituteId };
}

/**
 * 404, naming the institute(s) the batch is known under when it is not this one: only those the
 * client reaches, so a batch outside them reads exactly as one that does not exist.
 */
async function notFound(reply: FastifyReply, db: Db, client: ApiClient, { instituteId, batchId }: BatchKey): Promise<FastifyReply> {
  const elsewhere = (await institutesOf(db, batchId)).filter((id) => reaches(client, id));
  const under = elsewhere.length === 1 ? `institute ${elsewhere[0]}` : `institutes ${elsewhere.join(', ')}`;
  const hint = elsewhere.length === 0 ? '' : `; it is known under ${under}: ask with ?instituteId=${elsewhere[0]}`;
  return reply.code(404).send({ error: 'not_found', message: `batch ${batchId} of institute ${instituteId} is not known${hint}` });
}

function arrayProblems(events: unknown[]): Problem[] {
  if (events.length === 0) return [{ path: '(body)', reason: 'must hold at least one event' }];
  if (events.length > MAX_EVENTS_PER_POST) {
    return [{ path: '(body)', reason: `must hold at most ${MAX_EVENTS_PER_POST} events (got ${events.length}); split it` }];
  }
  return [];
}

/** Every event parsed; `problems` names each bad field by path (all of them, for the 400). */
function parseEvents(events: unknown[], isArray: boolean, defaults: IntakeDefaults): { valid: BatchEvent[]; problems: Problem[] } {
  const valid: BatchEvent[] = [];
  const problems: Problem[] = [];
  events.forEach((event, index) => {
    const parsed = parseBatchEvent(event, defaults);
    if (parsed.ok) valid.push(parsed.event);
    else problems.push(...parsed.problems.map(({ field, reason }) => ({ path: pathOf(isArray ? index : undefined, field), reason })));
  });
  return { valid, problems };
}

/** Changes of batches never recorded, as problems by path. */
function unknownProblems(refused: Map<number, FieldProblem[]>, isArray: boolean): Problem[] {
  return [...refused].flatMap(([index, problems]) => problems.map(({ field, reason }) => ({ path: pathOf(isArray ? index : undefined, field), reason })));
}

/** `name`, `(body)`, `[3].name`, `[3]`. */
function pathOf(index: number | undefined, field: string): string {
  const whole = field === '(event)';
  if (index === undefined) return whole ? '(body)' : field;
  return whole ? `[${index}]` : `[${index}].${field}`;
}

export function badRequest(reply: FastifyReply, problems: Problem[], message?: string): FastifyReply {
  const shown = problems.slice(0, 10).map((p) => `${p.path} ${p.reason}`);
  if (problems.length > shown.length) shown.push(`and ${problems.length - shown.length} more`);
  const summary = shown.join('; ');
  return reply.code(400).send({ error: 'invalid_request', message: message ? `${summary} (${message})` : summary, problems });
}
