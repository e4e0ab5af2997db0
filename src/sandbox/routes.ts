// The remote operations. Each call runs the same pipeline:
// latency → credentials/headers → rate limit → fault decision → operation → answer (or fault).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkAuth } from './auth.ts';
import type { SandboxContext } from './context.ts';
import { takesEffect, type SandboxOperation } from './faults.ts';
import { buildListing, fullRecord, shortRecord } from './records.ts';
import { deliverFault, failure, send, success, type Answer } from './respond.ts';
import { CLASS_TYPES, type ClassType } from './store.ts';
import { addClassBody, editClassBody, parseBody } from './validation.ts';

type Operation = (request: FastifyRequest) => Answer;

export function registerRemoteRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  const route = (op: SandboxOperation, run: Operation) => (request: FastifyRequest, reply: FastifyReply) =>
    pipeline(ctx, op, run, request, reply);

  app.post(ctx.addClassPath, route('addClass', (req) => addClass(ctx, req.body)));
  app.route({ method: ctx.editClassMethod, url: '/teacher/editClass', handler: route('editClass', (req) => editClass(ctx, req.body)) });
  app.get('/user/v2/classes/:classId', route('getClass', (req) => getClass(ctx, req)));
  app.get('/institutes/:instituteId/classes', route('listClasses', (req) => listClasses(ctx, req)));
  // Opening a join link: lets a demo or test follow the link the sync produced. No auth, no faults.
  app.get<{ Params: { token: string } }>('/classroom/join/:token', (req, reply) => {
    const classId = req.params.token.slice(0, -8);
    const record = ctx.store.get(classId);
    const live = record && record.magicJoinToken?.token === req.params.token && record.joinMagicLink !== '';
    return send(reply, live ? success({ classId, name: record.name }) : failure(404, 'join link not found'));
  });
}

async function pipeline(ctx: SandboxContext, op: SandboxOperation, run: Operation, request: FastifyRequest, reply: FastifyReply) {
  for (const listener of ctx.requestListeners) listener(op);
  const latency = ctx.faults.latencyMs();
  if (latency > 0) await sleep(latency, ctx.closing);
  if (ctx.closing.aborted) {
    reply.hijack();
    request.raw.socket.destroy();
    return reply;
  }
  const refusal = checkAuth(request.headers, ctx.credentials);
  if (refusal) return answer(ctx, op, reply, failure(refusal.status, refusal.message));
  const { config } = ctx.faults;
  if (!ctx.rateLimiter.admit(ctx.clock(), config.rateLimitPerMinute, config.rateLimitWindowMs ?? 60_000)) {
    ctx.stats.record(op, 'rateLimited');
    return send(reply, failure(429, 'Rate limit exceeded: too many API calls per minute'));
  }
  const fault = ctx.faults.decide(op);
  if (!fault) return answer(ctx, op, reply, run(request));
  // Some faults strike before the operation runs (nothing changes), the rest after it took effect.
  const result = takesEffect(fault) ? run(request) : undefined;
  ctx.stats.record(op, fault, true);
  return deliverFault(request, reply, {
    fault,
    answer: result,
    serverErrorStatus: ctx.faults.serverErrorStatus(),
    retryAfterSeconds: config.retryAfterSeconds ?? 1,
    hangMs: config.hangMs ?? 600_000,
    hangs: ctx.hangs,
  });
}

function answer(ctx: SandboxContext, op: SandboxOperation, reply: FastifyReply, result: Answer): FastifyReply {
  ctx.stats.record(op, result.status === 200 ? 'ok' : `http${result.status}`);
  return send(reply, result);
}

function addClass(ctx: SandboxContext, body: unknown): Answer {
  const parsed = parseBody(addClassBody, body);
  if (!parsed.ok) return failure(400, parsed.message);
  const { name, subject, instituteId, classType, ...extra } = parsed.value;
  if (!ctx.store.hasInstitute(instituteId)) {
    return failure(403, 'instituteId: not an institute this integrator may manage');
  }
  const record = ctx.store.create({ name, subject, instituteId, classType, extra });
  return success({ ...shortRecord(record, ctx.records), instituteId });
}

function editClass(ctx: SandboxContext, body: unknown): Answer {
  const parsed = parseBody(editClassBody, body);
  if (!parsed.ok) return failure(400, parsed.message);
  const { classId, enableJoinMagicLink } = parsed.value;
  const record =
    enableJoinMagicLink === undefined ? ctx.store.get(classId) : ctx.store.setJoinLink(classId, enableJoinMagicLink);
  if (!record) return failure(404, `classId: class ${classId} not found`);
  return success(shortRecord(record, ctx.records));
}

function getClass(ctx: SandboxContext, request: FastifyRequest): Answer {
  const { classId } = request.params as { classId: string };
  const { full } = request.query as { full?: string };
  const record = ctx.store.get(classId);
  if (!record) return failure(404, `class ${classId} not found`);
  return success(full === 'true' ? fullRecord(record, ctx.records) : shortRecord(record, ctx.records));
}

function listClasses(ctx: SandboxContext, request: FastifyRequest): Answer {
  const { instituteId } = request.params as { instituteId: string };
  const query = request.query as Record<string, unknown>;
  const classes = ctx.store.classesOf(instituteId);
  if (!classes) return failure(404, `institute ${instituteId} not found`);
  const classType = text(query.classType) || undefined;
  if (classType !== undefined && !(CLASS_TYPES as readonly string[]).includes(classType)) {
    return failure(400, `classType: must be one of ${CLASS_TYPES.join(', ')}`);
  }
  const { config } = ctx.faults;
  return success(
    buildListing(classes, {
      searchTerm: text(query.searchTerm),
      classType: classType as ClassType | undefined,
      showCoTeachers: text(query.showCoTeachers) !== 'false',
      includeIds: config.listingIncludesIds ?? true,
      createdNoLaterThan: ctx.clock() - (config.listingDelayMs ?? 0),
    }),
  );
}

/** A query parameter given once, else undefined (a repeated one arrives as an array). */
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Resolves after `ms`, or at once when the sandbox closes. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
