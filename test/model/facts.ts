// The model's predicates over a row (the design: Facts of a batch row) and the small edits every
// operation shares: queueing a job, fencing a runner off, spending a budget.
import type { Budget, Job, Model, Options, Row, State, View } from './types.ts';

export const TERMINAL: ReadonlySet<State> = new Set(['synced', 'failed', 'needs_review', 'abandoned', 'cancelled']);
/** States in which the batch's class exists and no operator holds the batch. */
export const WITH_CLASS: ReadonlySet<State> = new Set(['created', 'link_enabled', 'synced', 'cancelled']);

/** mayHaveClass: an add-class was sent, nothing proved it made nothing, and no class is stored. */
export const doubt = (r: Row): boolean => r.sent && r.classId === null;
export const nothingSent = (r: Row): boolean => !r.sent && r.classId === null;

/**
 * A terminal batch with a change its run has not applied yet: one test, for the run, the job and the
 * sweep alike (revisions only; an archived class of a synced batch is never at rest, since a refused
 * unarchive fails the batch: run-class.ts, MODEL FINDING 8).
 */
export function changeDue(r: Pick<Row, 'state' | 'revision' | 'appliedRevision'>, _opts: Options = {}): boolean {
  return (r.state === 'synced' || r.state === 'cancelled') && r.revision > r.appliedRevision;
}

/** A run has work: a state short of rest, or a change due (intake, the sweep and the job ask this). */
export const hasWork = (r: Row, opts: Options = {}): boolean => !TERMINAL.has(r.state) || changeDue(r, opts);

/** At rest: terminal, no change due, no run in progress. */
export const atRest = (m: Model, opts: Options = {}): boolean => m.run === null && TERMINAL.has(m.row.state) && !changeDue(m.row, opts);

export function viewOf(r: Row): View {
  const { state, classId, cancelled, revision, appliedRevision, archived, event, className, nextClassName } = r;
  return { state, classId, cancelled, revision, appliedRevision, archived, event, className, nextClassName };
}

/** Queues the batch's job unless one exists (one job id per batch: adding it again is a no-op). */
export const enqueue = (job: Job): Job => (job === 'none' ? 'queued' : job);

/** Queues a job when the row has work (what intake and operator actions do after their write). */
export const queueIfWork = (m: Model, opts: Options = {}): Model => (hasWork(m.row, opts) && m.job === 'none' ? { ...m, job: 'queued' } : m);

/** A write that takes the lease from whoever holds it: its epoch moves on, the runner is fenced off. */
export function fence(m: Model): Model {
  const run = m.run ? { ...m.run, holds: false } : null;
  return { ...m, run, row: { ...m.row, leaseLive: false } };
}

export function spend(m: Model, what: keyof Budget): Model | null {
  if (m.budget[what] <= 0) return null;
  return { ...m, budget: { ...m.budget, [what]: m.budget[what] - 1 } };
}

/** The stored class, if any. */
export const storedClass = (m: Model) => (m.row.classId === null ? undefined : m.remote[m.row.classId]);

/** Classes of the batch on the remote that are still there: what a listing shows of it. */
export const listed = (m: Model): number[] => m.remote.flatMap((c, id) => (!c.deleted ? [id] : []));
