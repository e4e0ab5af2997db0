// The remote operations. Each call runs the same pipeline:
// latency → credentials/headers → refused key → rate limit → fault decision → operation → answer (or fault).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type KeyState, identify } from './accounts.ts';
import type { SandboxContext } from './context.ts';
import { takesEffect, type SandboxOperation } from './faults.ts';
import { rewriteName } from './names.ts';
import { buildListing, fullRecord, shortRecord } from './records.ts';
import { readable, replicaView } from './replica.ts';
import { deliverFault, failure, send, success, type Answer } from './respond.ts';
import { CLASS_TYPES, type ClassEdit, type ClassType } from './store.ts';
import { addClassBody, editClassBody, parseBody } from './validation.ts';

type Operation = (request: FastifyRequest, key: KeyState) => Answer;

export function registerRemoteRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  const route = (op: SandboxOperation, run: Operation) => (request: FastifyRequest, reply: FastifyReply) => pipeline(ctx, op, run, request, reply);

  app.post(
    ctx.addClassPath,
    route('addClass', (req, key) => addClass(ctx, req.body, key)),
  );
  app.route({ method: ctx.editClassMethod, url: '/teacher/editClass', handler: route('editClass', (req, key) => editClass(ctx, req.body, key)) });
  app.get(
    '/user/v2/classes/:classId',
    route('getClass', (req, key) => getClass(ctx, req, key)),
  );
  app.get(
    '/institutes/:instituteId/classes',
    route('listClasses', (req, key) => listClasses(ctx, req, key)),
  );
  // Opening a join link: lets a demo or test follow the link the sync produced. No auth, no faults.
  app.get<{ Params: { token: string } }>('/classroom/join/:token', (req, reply) => {
    const classId = req.params.token.slice(0, -8);
    const record = ctx.store.get(classId);
    const live = record && record.magicJoinToken?.token === req.params.token && record.joinMagicLink !== '';
    return send(reply, live ? success({ classId, name: record.name }) : failure(404, 'join link not found'));
  });
}

async function pipeline(ctx: SandboxContext, op: SandboxOperation, run: Operation, request: FastifyRequest, reply: FastifyReply) {
  if (ctx.requestListeners.size > 0) {
    const arriving = { body: request.body, classId: classIdOf(op, request) };
    for (const listener of ctx.requestListeners) listener(op, arriving);
  }
  const latency = ctx.faults.latencyMs();
  if (latency > 0) await sleep(ctx, latency);
  if (ctx.closing.aborted) {
    reply.hijack();
    request.raw.socket.destroy();
    return reply;
  }
  const who = identify(request.headers, ctx.keys);
  if ('refusal' in who) return answer(ctx, op, reply, failure(who.refusal.status, who.refusal.message));
  const { key } = who;
  // Right credentials, but the key itself is revoked or suspended: refused like bad credentials.
  const keyRefused = ctx.faults.keyRefusal(key.name);
  if (keyRefused) return answer(ctx, op, reply, failure(keyRefused.status, keyRefused.message), key);
  const { config } = ctx.faults;
  const limit = config.rateLimitPerAccount?.[key.name] ?? key.rateLimitPerMinute ?? config.rateLimitPerMinute;
  if (!key.limiter.admit(ctx.clock(), limit, config.rateLimitWindowMs ?? 60_000)) {
    ctx.stats.record(op, 'rateLimited', false, key.name);
    return send(reply, failure(429, 'Rate limit exceeded: too many API calls per minute'));
  }
  const fault = ctx.faults.decide(op);
  if (!fault) return answer(ctx, op, reply, run(request, key), key);
  // Some faults strike before the operation runs (nothing changes), the rest after it took effect.
  const result = takesEffect(fault) ? run(request, key) : undefined;
  ctx.stats.record(op, fault, true, key.name);
  return deliverFault(request, reply, {
    fault,
    answer: result,
    serverErrorStatus: ctx.faults.serverErrorStatus(),
    retryAfterSeconds: config.retryAfterSeconds ?? 1,
    hangMs: config.hangMs ?? 600_000,
    hangs: ctx.hangs,
    lateEffect: {
      ms: config.lateEffectMs ?? 2_000,
      run: () => {
        run(request, key);
        ctx.stats.lateEffectApplied();
      },
    },
  });
}

function answer(ctx: SandboxContext, op: SandboxOperation, reply: FastifyReply, result: Answer, key?: KeyState): FastifyReply {
  ctx.stats.record(op, result.status === 200 ? 'ok' : `http${result.status}`, false, key?.name);
  return send(reply, result);
}

function addClass(ctx: SandboxContext, body: unknown, key: KeyState): Answer {
  const parsed = parseBody(addClassBody, body);
  if (!parsed.ok) return failure(400, parsed.message);
  const { name, subject, instituteId, classType, ...extra } = parsed.value;
  if (!ctx.store.hasInstitute(instituteId)) return failure(403, 'instituteId: not an institute this integrator may manage');
  if (!key.instituteIds.has(instituteId)) return failure(403, 'instituteId: not an institute this key may manage');
  const kept = rewriteName(name, ctx.faults.config.nameRewrite);
  // A name of only whitespace passes the body check but not a remote that trims before storing.
  if (kept === '') return failure(400, 'name: must not be empty');
  const readLagMs = ctx.faults.readLagMs();
  const record = ctx.store.create({ name: kept, sentName: name, subject, instituteId, classType, extra, readLagMs });
  return success({ ...shortRecord(record, ctx.records), instituteId });
}

function editClass(ctx: SandboxContext, body: unknown, key: KeyState): Answer {
  const parsed = parseBody(editClassBody, body);
  if (!parsed.ok) return failure(400, parsed.message);
  const { classId, enableJoinMagicLink, name, subject, archived, instituteId: _institute, _id: _self, joinMagicLink: _link, ...extra } = parsed.value;
  const existing = ctx.store.get(classId);
  // A class the replica does not know yet is "not found", and the edit is not applied.
  if (!existing || !readable(existing, ctx.clock())) return failure(404, `classId: class ${classId} not found`);
  if (!key.instituteIds.has(existing.instituteId)) return othersClass(classId);
  // A rename is kept as add-class keeps a name: rewritten, and refused if nothing is left.
  const renamed = name === undefined ? undefined : { kept: rewriteName(name, ctx.faults.config.nameRewrite), sent: name };
  if (renamed?.kept === '') return failure(400, 'name: must not be empty');
  const changes: ClassEdit = {
    name: renamed,
    subject,
    archived,
    extra: Object.keys(extra).length > 0 ? extra : undefined,
    enableJoinMagicLink,
  };
  const record = ctx.store.edit(classId, changes, () => ctx.faults.readLagMs()) ?? existing;
  return success(shortRecord(record, ctx.records));
}

function getClass(ctx: SandboxContext, request: FastifyRequest, key: KeyState): Answer {
  const { classId } = request.params as { classId: string };
  const { full } = request.query as { full?: string };
  const now = ctx.clock();
  const stored = ctx.store.get(classId);
  if (!stored || !readable(stored, now)) return failure(404, `class ${classId} not found`);
  if (!key.instituteIds.has(stored.instituteId)) return othersClass(classId);
  const record = replicaView(stored, now);
  return success(full === 'true' ? fullRecord(record, ctx.records) : shortRecord(record, ctx.records));
}

function listClasses(ctx: SandboxContext, request: FastifyRequest, key: KeyState): Answer {
  const { instituteId } = request.params as { instituteId: string };
  const query = request.query as Record<string, unknown>;
  const classes = ctx.store.classesOf(instituteId);
  if (!classes) return failure(404, `institute ${instituteId} not found`);
  if (!key.instituteIds.has(instituteId)) return failure(403, `institute ${instituteId}: not an institute this key may manage`);
  const classType = text(query.classType) || undefined;
  if (classType !== undefined && !(CLASS_TYPES as readonly string[]).includes(classType)) {
    return failure(400, `classType: must be one of ${CLASS_TYPES.join(', ')}`);
  }
  const { config } = ctx.faults;
  const now = ctx.clock();
  return success(
    buildListing(classes, {
      searchTerm: text(query.searchTerm),
      classType: classType as ClassType | undefined,
      showCoTeachers: text(query.showCoTeachers) !== 'false',
      includeIds: config.listingIncludesIds ?? true,
      createdNoLaterThan: now - (config.listingDelayMs ?? 0),
      readableAt: now,
    }),
  );
}

/** The class a get-class (path) or edit-class (body) names, as sent; undefined for the others. */
function classIdOf(op: SandboxOperation, request: FastifyRequest): string | undefined {
  const named =
    op === 'getClass'
      ? (request.params as { classId?: unknown }).classId
      : op === 'editClass'
        ? (request.body as { classId?: unknown } | null)?.classId
        : undefined;
  return typeof named === 'string' ? named : undefined;
}

/** A class of an institute another key manages: this key may neither read nor change it. */
const othersClass = (classId: string): Answer => failure(403, `classId: class ${classId} belongs to an institute this key may not manage`);

/** A query parameter given once, else undefined (a repeated one arrives as an array). */
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Resolves after `ms` by the sandbox's timers, or at once when the sandbox closes. */
function sleep(ctx: SandboxContext, ms: number): Promise<void> {
  const signal = ctx.closing;
  return new Promise((resolve) => {
    const cancel = ctx.timers.after(ms, done);
    function done() {
      cancel();
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
