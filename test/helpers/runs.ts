// Driving one batch's runs by hand, as its jobs would but one at a time (runBatch with SyncDeps),
// with a client that can stop one chosen call and that notes, as each call leaves, whether the
// batch's lease was live then (invariant 3: no remote call without a live lease). Deterministic
// interleavings: stop a run at a call, change the batch meanwhile, let the run go on.
import { and, asc, eq, sql } from 'drizzle-orm';
import type { CallOptions, ClassChanges, ClassroomClient } from '../../src/classroom/client.ts';
import { type BatchRow, TERMINAL_STATES, batchClasses, webhookMessages } from '../../src/db/schema/index.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { changeDue } from '../../src/mapping/index.ts';
import type { SandboxOperation } from '../../src/sandbox/index.ts';
import { SyncError, queueAction } from '../../src/sync/errors.ts';
import { type SyncDeps, type SyncOutcome, type SyncSettings, runBatch } from '../../src/sync/machine.ts';
import { rowOf } from './batches.ts';
import type { Harness } from './harness.ts';

/**
 * No settle delay and no read lag: an add-class in doubt is settled from the first listing, and a
 * 404 for a stored class is believed at once (10 × SYNC_READ_LAG is 0).
 */
export const RUN_SETTINGS: SyncSettings = {
  leaseMs: 3_000,
  settleMs: 0,
  requestTimeoutMs: 1_000,
  readLagMs: 0,
  throttlePauseMs: 50,
  nameRules: { minCut: 16 },
};

const logger = createLogger({ level: 'silent' });
let attempt = 0;

/** Add-class requests the sandbox has received so far (refused ones too). */
export const addClassCalls = (h: Harness): number => h.sandbox.state({ classes: false }).calls.byOperation.addClass?.calls ?? 0;

export const keyOf = (h: Harness, batchId: string) => ({ instituteId: h.config.classroom.instituteId, batchId });

export function runDeps(h: Harness, classroom: ClassroomClient = h.runtime.remotes.default.classroom, workerId = 'runner'): SyncDeps {
  return { db: h.runtime.database.db, classroom, logger, workerId, settings: RUN_SETTINGS };
}

/** One run of the batch: how it ended, or what it threw (a run short of rest throws). */
export function runOnce(h: Harness, batchId: string, classroom?: ClassroomClient): Promise<{ outcome?: SyncOutcome; error?: unknown }> {
  attempt += 1;
  return runBatch(runDeps(h, classroom), keyOf(h, batchId), attempt).then(
    (outcome) => ({ outcome }),
    (error: unknown) => ({ error }),
  );
}

/**
 * Runs the batch until it is at rest with no change due (an operator's retry is not made here). A run
 * that hands the batch back to wait (an earlier edit may still land, a settle delay, a lease held elsewhere) is
 * followed after the delay it asks for, as the queue would, at most 3 s.
 */
export async function runToRest(h: Harness, batchId: string, classroom?: ClassroomClient, maxRuns = 12): Promise<BatchRow> {
  for (let i = 0; i < maxRuns; i += 1) {
    const { error } = await runOnce(h, batchId, classroom);
    if (error instanceof SyncError && queueAction(error.kind) === 'delay')
      await new Promise((resolve) => setTimeout(resolve, Math.min(error.delayMs ?? 0, 3_000)));
    const row = (await rowOf(h, batchId))!;
    if (TERMINAL_STATES.includes(row.state) && !changeDue(row)) return row;
  }
  const row = (await rowOf(h, batchId))!;
  throw new Error(`${batchId} not at rest after ${maxRuns} runs: ${row.state} (${row.lastErrorKind ?? '-'}: ${row.lastError ?? '-'})`);
}

/** The webhook messages written for the batch, oldest first. */
export async function messagesOf(h: Harness, batchId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  return h.runtime.database.db
    .select({ type: webhookMessages.type, data: webhookMessages.data })
    .from(webhookMessages)
    .where(eq(webhookMessages.batchId, batchId))
    .orderBy(asc(webhookMessages.id));
}

/** Where a watched call stops: before it is sent, or once the remote has acted on it (its answer held back). */
export type StopAt = 'beforeCall' | 'afterEffect';

export interface StopRule {
  operation: SandboxOperation;
  at: StopAt;
  /** Which call of that operation, by what it sends (an edit's changes; add-class: its name). The first match stops; the rule then disarms. */
  when?: (changes: ClassChanges | undefined) => boolean;
}

export interface WatchedClient {
  client: ClassroomClient;
  /** Resolves when the stop rule's call is reached (held there until `resume`). */
  reached: Promise<void>;
  resume(): void;
  /** Each call as it left: its operation, the name it sent (add-class, a rename), and whether the batch's lease was live then. */
  sent: Array<{ operation: SandboxOperation; name?: string | undefined; leaseLive: boolean }>;
}

/** The real client around one batch: every call's lease noted as it leaves, one call stopped by `stop`. */
export function watchedClient(h: Harness, batchId: string, stop?: StopRule): WatchedClient {
  const real = h.runtime.remotes.default.classroom;
  const sent: WatchedClient['sent'] = [];
  let armed = stop !== undefined;
  let reached!: () => void;
  let resume!: () => void;
  const reachedP = new Promise<void>((r) => (reached = r));
  const released = new Promise<void>((r) => (resume = r));
  const leaseLive = async () => {
    const [row] = await h.runtime.database.db
      .select({ live: sql<boolean | null>`${batchClasses.leaseExpiresAt} > now()` })
      .from(batchClasses)
      .where(and(eq(batchClasses.instituteId, h.config.classroom.instituteId), eq(batchClasses.batchId, batchId)));
    return row?.live === true;
  };
  async function around<R>(op: SandboxOperation, send: (o: CallOptions) => Promise<R>, options?: CallOptions, changes?: ClassChanges): Promise<R> {
    const noted: CallOptions = {
      ...options,
      beforeSend: async () => {
        await options?.beforeSend?.();
        sent.push({ operation: op, name: changes?.name, leaseLive: await leaseLive() });
      },
    };
    const stopping = armed && stop?.operation === op && (stop.when?.(changes) ?? true);
    if (!stopping || !stop) return send(noted);
    armed = false;
    if (stop.at === 'beforeCall') {
      reached();
      await released;
      return send(noted);
    }
    const outcome = await send(noted).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    reached();
    await released;
    if (outcome.ok) return outcome.value;
    throw outcome.error;
  }
  const client: ClassroomClient = {
    addClass: (input, o) => around('addClass', (n) => real.addClass(input, n), o, { name: input.name }),
    enableJoinLink: (classId, o) => around('editClass', (n) => real.enableJoinLink(classId, n), o),
    editClass: (classId, changes, o) => around('editClass', (n) => real.editClass(classId, changes, n), o, changes),
    getClass: (classId, o) => around('getClass', (n) => real.getClass(classId, n), o),
    listClasses: (instituteId, query, o) => around('listClasses', (n) => real.listClasses(instituteId, query, n), o),
  };
  return { client, reached: reachedP, resume, sent };
}
