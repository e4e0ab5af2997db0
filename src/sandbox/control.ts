// The control endpoint under /__sandbox: ground truth, fault settings and hand-made drift.
// No authentication: it is the test harness's side door, not part of the remote.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { SandboxContext } from './context.ts';
import { faultConfigSchema, oneShotSchema, type FaultConfig, type FaultController } from './faults.ts';
import { failure, send, success } from './respond.ts';
import type { StatsSnapshot } from './stats.ts';
import { toTruth, type ClassTruth, type StoredClass } from './store.ts';
import { manualClassBody, parseBody } from './validation.ts';

export const CONTROL_PREFIX = '/__sandbox';

/** What `GET /__sandbox/state` returns under `data` (also `RunningSandbox.state()`). */
export interface SandboxState {
  seed: number;
  classCount: number;
  /** Left out with `?classes=false`. */
  classes: ClassTruth[] | undefined;
  /** How many classes carry each stored name (after any `nameRewrite`). */
  byName: Record<string, number>;
  /** How many classes were sent with each name: more than 1 for one batch means a duplicate. */
  bySentName: Record<string, number>;
  /** Whether remote calls are refused right now (`refuseKey` set and not yet lapsed) for the primary key. */
  keyRefused: boolean;
  /** Per key (sandbox account): its institutes, the most calls it made in any one rate-limit window, and whether it is refused now. */
  accounts: Record<string, { instituteIds: string[]; peakCallsPerWindow: number; keyRefused: boolean }>;
  calls: StatsSnapshot;
  faults: { config: FaultConfig; queued: ReturnType<FaultController['queued']> };
}

export function groundTruth(ctx: SandboxContext, includeClasses = true): SandboxState {
  return {
    seed: ctx.seed(),
    classCount: ctx.store.size,
    classes: includeClasses ? ctx.store.truth() : undefined,
    byName: ctx.store.countByName(),
    bySentName: ctx.store.countBySentName(),
    keyRefused: ctx.faults.keyRefusal(ctx.keys[0]?.name) !== undefined,
    accounts: Object.fromEntries(
      ctx.keys.map((key) => [
        key.name,
        { instituteIds: [...key.instituteIds], peakCallsPerWindow: key.limiter.peak(), keyRefused: ctx.faults.keyRefusal(key.name) !== undefined },
      ]),
    ),
    calls: ctx.stats.snapshot(),
    faults: { config: ctx.faults.config, queued: ctx.faults.queued() },
  };
}

export function registerControlRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  const p = CONTROL_PREFIX;
  // `?classes=false` leaves out the class list (for stores of 100k classes).
  app.get<{ Querystring: { classes?: string } }>(`${p}/state`, (req, reply) => send(reply, success(groundTruth(ctx, req.query.classes !== 'false'))));
  app.get(`${p}/faults`, (_req, reply) => send(reply, success({ config: ctx.faults.config, queued: ctx.faults.queued() })));
  app.put(`${p}/faults`, (req, reply) =>
    attempt(reply, () => {
      ctx.faults.set(faultConfigSchema.parse(req.body ?? {}));
      return ctx.faults.config;
    }),
  );
  app.post(`${p}/faults/next`, (req, reply) =>
    attempt(reply, () => {
      // One entry or an array; all validated before any is queued.
      const entries = z.union([oneShotSchema, z.array(oneShotSchema)]).parse(req.body);
      for (const entry of Array.isArray(entries) ? entries : [entries]) ctx.faults.enqueue(entry);
      return { queued: ctx.faults.queued() };
    }),
  );
  app.delete(`${p}/faults`, (_req, reply) => {
    ctx.faults.clear();
    return send(reply, success({ config: ctx.faults.config }));
  });
  app.post(`${p}/reset`, (req, reply) =>
    attempt(reply, () => {
      const { seed } = z.strictObject({ seed: z.number().int().min(0).max(0xffffffff).optional() }).parse(req.body ?? {});
      ctx.reset(seed);
      return { seed: ctx.seed() };
    }),
  );
  registerClassMutations(app, ctx);
}

function registerClassMutations(app: FastifyInstance, ctx: SandboxContext): void {
  const p = CONTROL_PREFIX;
  app.post(`${p}/classes`, (req, reply) => {
    const parsed = parseBody(manualClassBody, req.body);
    if (!parsed.ok) return send(reply, failure(400, parsed.message));
    const { count, instituteId, ...rest } = parsed.value;
    const institute = instituteId ?? ctx.defaultInstituteId;
    if (!ctx.store.hasInstitute(institute)) return send(reply, failure(404, `institute ${institute} not found`));
    const created: StoredClass[] = [];
    for (let i = 0; i < count; i++) created.push(ctx.store.create({ ...rest, instituteId: institute }));
    // A bulk create answers with ids only; one class answers with its truth record.
    const data = count === 1 && created[0] ? toTruth(created[0]) : { ids: created.map((c) => c._id) };
    return send(reply, success(data));
  });
  const byId = (action: 'delete' | 'hide' | 'blankLink') => (id: string, reply: FastifyReply) =>
    ctx.store[action](id) ? send(reply, success({ id })) : send(reply, failure(404, `class ${id} not found`));
  app.delete<{ Params: { id: string } }>(`${p}/classes/:id`, (req, reply) => byId('delete')(req.params.id, reply));
  app.post<{ Params: { id: string } }>(`${p}/classes/:id/hide`, (req, reply) => byId('hide')(req.params.id, reply));
  app.post<{ Params: { id: string } }>(`${p}/classes/:id/blank-link`, (req, reply) => byId('blankLink')(req.params.id, reply));
}

/** Runs a control action; a ZodError becomes a 400 naming the field. */
function attempt(reply: FastifyReply, action: () => unknown): FastifyReply {
  try {
    return send(reply, success(action()));
  } catch (error) {
    if (!(error instanceof z.ZodError)) throw error;
    const issue = error.issues[0];
    return send(reply, failure(400, `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`));
  }
}
