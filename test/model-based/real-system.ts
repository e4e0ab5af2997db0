// The real system one model-based sequence drives: the harness's PostgreSQL, Redis and sandbox, one
// batch of its own, and runs of the real state machine (`runBatch`) through observed clients. What
// an observer sees as a request leaves (a run sending without its lease, an add-class while the
// batch's class exists, a run that ended still sending) is recorded here as a violation.
import type fc from 'fast-check';
import type pg from 'pg';
import type { ClassroomClient } from '../../src/classroom/client.ts';
import { isClassroomError } from '../../src/classroom/errors.ts';
import type { BatchRow } from '../../src/db/schema/index.ts';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import type { BatchKey } from '../../src/mapping/index.ts';
import type { FaultConfig, SandboxOperation, StoredClass } from '../../src/sandbox/index.ts';
import { DeferError, LeaseLostError, PermanentSyncError, failureOf } from '../../src/sync/errors.ts';
import { type SyncSettings, runBatch } from '../../src/sync/machine.ts';
import { bothQueues } from '../../src/sync/queue.ts';
import { type Harness, publishDepsOf } from '../helpers/harness.ts';
import { type CallObserver, observedClient } from './clients.ts';
import { type Observed, readObserved, readRow } from './reads.ts';
import type { Zombie } from './zombies.ts';

/**
 * CLASSROOM_TIMEOUT of the harness's client, and the runs' `requestTimeoutMs` alike (as a worker
 * derives it): how long after a call of unknown outcome it may still land. The sandbox answers in
 * milliseconds, and the waits that follow such a call (an edit in flight, the patience of a settle)
 * are multiples of it.
 */
export const REQUEST_TIMEOUT_MS = 100;

/**
 * Short everything: a lease of 450 ms is renewed every 150 ms, so a paused run's heartbeat finds its
 * lease gone (zombies.ts, a takeover) within 150 ms.
 */
export const SETTINGS: SyncSettings = {
  leaseMs: 450,
  settleMs: 5,
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  readLagMs: 0,
  throttlePauseMs: 50,
  nameRules: { minCut: 16 },
};

/** What the commands predict from: the newest accepted values, whether a cancel is wanted, what the remote lost. */
export interface Model {
  version: number;
  name: string;
  subject: string;
  cancelWanted: boolean;
  /** The batch's class was deleted on the remote (by its operator, not by us). */
  classDeleted: boolean;
}

export interface Violation {
  kind: string;
  message: string;
}

/** How a run ended: the state it returned, or the kind of failure it threw. */
export interface RunEnd {
  state?: string;
  kind?: string;
  delayMs?: number;
}

const logger = createLogger({ level: 'silent' });

export class RealSystem {
  readonly key: BatchKey;
  /** Every class the sandbox has held during this sequence (each sequence starts with an empty sandbox). */
  readonly everClassIds = new Set<string>();
  readonly zombies: Zombie[] = [];
  /** Classes someone else made on the remote, with names like the batch's (not the batch's). */
  readonly foreignIds = new Set<string>();
  /** Counts of what the sequence exercised, for MODEL_STATS. */
  readonly seen: Record<string, number> = {};
  /** The scheduler of fc.scheduledModelRun, when the sequence races paths. */
  scheduler: fc.Scheduler | undefined;
  private readonly found: Violation[] = [];
  private runs = 0;
  /** What a path read right after its change (`viewAfterChange`), until the command that ran it takes it. */
  private afterChange: Observed | undefined;

  private constructor(
    readonly h: Harness,
    readonly seq: number,
    readonly lagMs: number,
    /** Whether a violation of this kind counts (MODEL_IGNORE, MODEL_FOCUS). */
    private readonly counts: (kind: string) => boolean,
  ) {
    this.key = { instituteId: h.config.classroom.instituteId, batchId: `mbt-${seq}` };
  }

  /** A fresh sequence: empty sandbox, tables and queues; the batch created at version 1 with `model`'s values. */
  static async begin(
    h: Harness,
    seq: number,
    model: Model,
    options: { lagMs: number; counts: (kind: string) => boolean; scheduler?: fc.Scheduler },
  ): Promise<RealSystem> {
    const real = new RealSystem(h, seq, options.lagMs, options.counts);
    real.scheduler = options.scheduler;
    h.sandbox.reset();
    h.sandbox.faults.clear();
    h.sandbox.faults.set(real.baseFaults());
    // One round trip for the tables (a simple query may hold several statements), beside the queues'.
    await Promise.all([
      real.pool.query('delete from batch_classes; delete from reconciliation_runs; delete from mbt_message_facts'),
      ...bothQueues(h.runtime.queue).map((q) => q.drain(true)),
    ]);
    await publishBatchCreated(publishDepsOf(h), { ...real.key, name: model.name, subject: model.subject, version: model.version });
    return real;
  }

  get pool(): pg.Pool {
    return this.h.runtime.database.pool;
  }

  get db() {
    return this.h.runtime.database.db;
  }

  /** The sandbox's settings when no fault is asked for: read lag as the runs expect it. */
  baseFaults(): FaultConfig {
    return { hangMs: 5_000, retryAfterSeconds: 0, readLagMs: this.lagMs, listingDelayMs: this.lagMs };
  }

  settings(): SyncSettings {
    return { ...SETTINGS, readLagMs: this.lagMs };
  }

  count(what: string): void {
    this.seen[what] = (this.seen[what] ?? 0) + 1;
  }

  violation(kind: string, message: string): void {
    if (this.counts(kind)) this.found.push({ kind, message });
  }

  takeViolations(): Violation[] {
    return this.found.splice(0);
  }

  row(): Promise<BatchRow> {
    return readRow(this.db, this.key);
  }

  /**
   * The invariants' view right after a path's change (actions.ts `ruled`), kept for the command that
   * ran the path: a Step checks the invariants on it (commands.ts) instead of reading it again.
   */
  async viewAfterChange(): Promise<Observed> {
    this.afterChange = await readObserved(this.db, this.key);
    return this.afterChange;
  }

  /** The view `viewAfterChange` kept, once; undefined if none was kept since the last take. */
  takeViewAfterChange(): Observed | undefined {
    const view = this.afterChange;
    this.afterChange = undefined;
    return view;
  }

  /** The batch's classes on the remote now: every class the sandbox holds but those someone else made. */
  ownClasses(): StoredClass[] {
    return [...this.h.sandbox.store.all()].filter((c) => !this.foreignIds.has(c._id));
  }

  /** Remembers every class of the batch the sandbox holds now. */
  noteClasses(): void {
    for (const c of this.ownClasses()) this.everClassIds.add(c._id);
  }

  /** Ends `workerId`'s lease now, as if its process had stopped renewing it long ago. */
  async expireLease(workerId: string): Promise<void> {
    await this.pool.query(
      `update batch_classes set lease_expires_at = now() - interval '1 millisecond' where institute_id = $1 and batch_id = $2 and lease_owner = $3`,
      [this.key.instituteId, this.key.batchId, workerId],
    );
  }

  /** One run of the state machine, its client made from the observed real one by `wrap`. */
  startRun(wrap: (observed: ClassroomClient) => ClassroomClient = (c) => c): { workerId: string; done: Promise<RunEnd> } {
    this.runs += 1;
    const workerId = `mbt-${this.seq}-w${this.runs}`;
    const tracking = { ended: false, epoch: undefined as number | undefined };
    const observed = observedClient(this.h.runtime.remotes.default.classroom, this.observer(workerId, tracking));
    const deps = { db: this.db, classroom: wrap(observed), logger, workerId, settings: this.settings() };
    const done = runBatch(deps, this.key, this.runs).then(
      (outcome): RunEnd => ({ state: outcome.state }),
      (error: unknown): RunEnd => this.failed(error),
    );
    return { workerId, done: done.finally(() => (tracking.ended = true)) };
  }

  run(): Promise<RunEnd> {
    return this.startRun().done;
  }

  /** Every way a run may legitimately end; anything else (a TypeError, a SQL error) is a bug. */
  private failed(error: unknown): RunEnd {
    const { kind, reason, message, delayMs } = failureOf(error);
    this.count(`run threw ${kind}`);
    const expected = error instanceof DeferError || error instanceof LeaseLostError || error instanceof PermanentSyncError || isClassroomError(error);
    if (!expected && (kind === 'internal' || kind === 'database')) this.violation('run-internal-error', `a run failed with ${kind}/${reason}: ${message}`);
    return { kind, ...(delayMs === undefined ? {} : { delayMs }) };
  }

  /** Invariants 2 and 3, as each request of `workerId`'s run leaves. */
  private observer(workerId: string, tracking: { ended: boolean; epoch: number | undefined }): CallObserver {
    return {
      leaving: async (op: SandboxOperation, signal: AbortSignal | undefined) => {
        const { rows } = await this.pool.query<{ owner: string | null; epoch: number; live: boolean | null }>({
          name: 'mbt_lease',
          text: 'select lease_owner as owner, lease_epoch as epoch, lease_expires_at > now() as live from batch_classes where institute_id = $1 and batch_id = $2',
          values: [this.key.instituteId, this.key.batchId],
        });
        // Aborted (its heartbeat found the lease gone): the request is not sent after all.
        if (signal?.aborted || !rows[0]) return;
        if (tracking.ended) this.violation('inv3-call-after-run-ended', `${workerId} sent ${op} after its run had returned`);
        if (op === 'addClass') {
          this.noteClasses();
          if (this.everClassIds.size > 0)
            this.violation('inv2-add-class-with-class', `${workerId} sent add-class while the batch's class exists (${[...this.everClassIds]})`);
        }
        const problem = leaseProblem(workerId, tracking, rows[0]);
        if (problem === 'fenced') this.count('call after its lease was fenced by intake or a claim (local check only)');
        else if (problem) this.violation(`inv3-${problem}`, `${workerId} sent ${op} ${problem.replaceAll('-', ' ')} (lease ${JSON.stringify(rows[0])})`);
      },
    };
  }
}

/** What is wrong with a request leaving under this lease, if anything; `fenced`: ended by intake or a claim, seen by the run's heartbeat only later. */
function leaseProblem(
  workerId: string,
  tracking: { epoch: number | undefined },
  lease: { owner: string | null; epoch: number; live: boolean | null },
): string | undefined {
  if (lease.owner === workerId && lease.live) {
    // A run may take the lease again for a change that arrived meanwhile (runBatch's rounds): a newer epoch of its own.
    tracking.epoch = lease.epoch;
    return undefined;
  }
  if (lease.owner === workerId) return 'with-its-lease-expired';
  if (lease.owner !== null) return 'while-another-run-holds-the-lease';
  if (tracking.epoch !== undefined && lease.epoch === tracking.epoch) return 'after-its-own-write-released-the-lease';
  return 'fenced';
}
