// What the fault suite adds for the doubt rule (docs/reliability.md, "The doubt rule"), beside the
// faults, kills and changes of chaos.ts: refusals (refusals.ts), classes deleted on the remote
// (remote-deletes.ts), an operator's retries, abandons and undos at random moments (operators.ts),
// the heal phase's operator (heal.ts), and the checks of what no single batch's row can show: calls
// without a lease (lease-audit.ts) and the webhooks' last word (last-word.ts). chaos.ts starts these,
// stops them, and puts their figures in its report.
import { batchClasses } from '../../src/db/schema/index.ts';
import type { createRuntime } from '../../src/runtime/runtime.ts';
import type { ClassTruth, RunningSandbox } from '../../src/sandbox/index.ts';
import type { Expected } from './changes.ts';
import { type HealFigures, atRest, heal } from './heal.ts';
import { type LastWordReport, lastWord } from './last-word.ts';
import { type LeaseAuditReport, LeaseAuditor } from './lease-audit.ts';
import { type OperatorFigures, OperatorDriver } from './operators.ts';
import { type ListingWindowFigures, refusalsInjected, refuseNextCalls } from './refusals.ts';
import { ClassDeleter, type Deletion } from './remote-deletes.ts';
import { type ChangeChecks, type RestNotes, changeChecks } from './rest-checks.ts';

type Runtime = ReturnType<typeof createRuntime>;
type Row = typeof batchClasses.$inferSelect;

export interface DoubtFigures {
  /** Refusals the sandbox injected (`bodyRejected`), per operation, and the window of refused listings. */
  refusals: { injected: Record<string, number>; listingWindow: ListingWindowFigures };
  /** Rows with an edit-class refusal recorded, and batches resting synced with their newest change refused (rest-checks.ts). */
  editsRefused: { recorded: number; atRest: string[]; rowBehindClass: string[] };
  /** Classes the suite deleted on the remote, and how their batches rest. */
  deletions: { deleted: number; byWhen: Record<string, number>; restingIn: Record<string, number> };
  /** Batches at rest in `synced` whose class the suite deleted after (nothing more asked of it). */
  syncedClassGone: number;
  /** Batches at rest in `failed` because the suite deleted their class (the remote no longer knows it). */
  failedClassGone: number;
  /** Batches at rest in `abandoned`, left so by the operator on purpose (of which: abandoned while a class may exist). */
  abandoned: { left: number; mayHaveClass: number };
  operators: OperatorFigures;
  heal: HealFigures;
  leaseAudit: LeaseAuditReport;
  lastWord: LastWordReport;
}

/** The drivers that run beside the fleet: the lease audit, the deletions, the operator. */
export class DoubtDrivers {
  readonly auditor: LeaseAuditor;
  private deleter: ClassDeleter | undefined;
  private operators: OperatorDriver | undefined;
  private operatorFigures: OperatorFigures | undefined;

  constructor(
    private readonly runtime: Runtime,
    private readonly sandbox: RunningSandbox,
    private readonly seed: number,
  ) {
    this.auditor = new LeaseAuditor(sandbox);
  }

  /** The lease audit listens from the first call on. */
  listen(): void {
    this.auditor.start();
  }

  /** Once the batches are published: the deleter and the operator start. */
  async start(): Promise<void> {
    const db = this.runtime.database.db;
    const rows = await db.select({ instituteId: batchClasses.instituteId, batchId: batchClasses.batchId }).from(batchClasses).orderBy(batchClasses.id);
    this.deleter = new ClassDeleter({ seed: this.seed, batchIds: rows.map((r) => r.batchId), sandbox: this.sandbox, db, auditor: this.auditor });
    this.operators = new OperatorDriver(this.deps(), this.seed, rows);
    this.deleter.start();
    this.operators.start();
    refuseNextCalls(this.sandbox);
  }

  /** Before the heal phase: no more deletions or operator steps at random moments. */
  async stop(): Promise<void> {
    this.operatorFigures ??= await this.operators?.stop();
    await this.deleter?.stop();
  }

  /** The heal phase's operator (faults already cleared): until every batch is at rest, or `deadline`. */
  heal(n: number, deadline: number, meanwhile: () => void): Promise<HealFigures> {
    return heal({
      deps: this.deps(),
      n,
      keyOf: (row) => ({ instituteId: row.instituteId, batchId: row.batchId }),
      leave: this.operators?.leftAbandoned() ?? new Set(),
      visibleClass: (row) => this.visible(row),
      deadline,
      meanwhile,
    });
  }

  deletions(): Map<string, Deletion> {
    return new Map((this.deleter?.deletions() ?? []).map((d) => [d.batchId, d]));
  }

  leftAbandoned(): ReadonlySet<string> {
    return this.operators?.leftAbandoned() ?? new Set();
  }

  /** At rest (heal.ts), with the sandbox's word on whether a cancelled batch's class is still listed. */
  atRest(row: Row): boolean {
    return atRest(row, (r) => this.visible(r));
  }

  /**
   * The report's figures, and every batch at rest checked against what its last event asked for
   * (rest-checks.ts); the workers are stopped and PostgreSQL is up.
   */
  async report(
    rows: readonly Row[],
    classes: readonly ClassTruth[],
    expected: Map<string, Expected>,
    phases: { listingWindow: ListingWindowFigures; healed: HealFigures },
  ): Promise<{ doubt: DoubtFigures; checks: ChangeChecks }> {
    const notes: RestNotes = { editsRefused: 0, refusedAtRest: [], rowBehindClass: [] };
    const input = { rows, classes, expected, deleted: this.deletions(), leave: this.leftAbandoned(), atRest: (row: Row) => this.atRest(row) };
    const checks = await changeChecks(this.runtime, input, notes);
    const doubt = await this.figures(rows, phases.listingWindow, phases.healed);
    const editsRefused = { recorded: notes.editsRefused, atRest: notes.refusedAtRest, rowBehindClass: notes.rowBehindClass };
    return { doubt: { ...doubt, editsRefused }, checks };
  }

  private async figures(rows: readonly Row[], listingWindow: ListingWindowFigures, healed: HealFigures): Promise<DoubtFigures> {
    this.auditor.stop();
    const deleted = this.deletions();
    const restingIn: Record<string, number> = {};
    for (const row of rows) if (deleted.has(row.batchId)) restingIn[row.state] = (restingIn[row.state] ?? 0) + 1;
    const byWhen: Record<string, number> = {};
    for (const d of deleted.values()) byWhen[d.when] = (byWhen[d.when] ?? 0) + 1;
    const leave = this.leftAbandoned();
    const abandoned = rows.filter((r) => r.state === 'abandoned' && leave.has(r.batchId));
    const restSet = new Set(rows.filter((r) => this.atRest(r)).map((r) => r.batchId));
    return {
      refusals: { injected: refusalsInjected(this.sandbox), listingWindow },
      editsRefused: { recorded: 0, atRest: [], rowBehindClass: [] },
      deletions: { deleted: deleted.size, byWhen, restingIn },
      syncedClassGone: rows.filter((r) => r.state === 'synced' && deleted.has(r.batchId)).length,
      failedClassGone: rows.filter((r) => r.state === 'failed' && r.lastErrorKind === 'class_unknown' && deleted.has(r.batchId)).length,
      abandoned: { left: abandoned.length, mayHaveClass: abandoned.filter((r) => r.classId === null && r.createSentAt !== null).length },
      operators: this.operatorFigures ?? { batchesScripted: 0, actions: {}, errors: 0, dropped: 0 },
      heal: healed,
      leaseAudit: await this.auditor.report(this.runtime.database.pool),
      lastWord: await lastWord(this.runtime, restSet),
    };
  }

  private deps() {
    return { db: this.runtime.database.db, queue: this.runtime.queue, logger: this.runtime.logger };
  }

  private visible(row: Row): boolean {
    const c = row.classId === null ? undefined : this.sandbox.store.get(row.classId);
    return c !== undefined && !c.archived;
  }
}
