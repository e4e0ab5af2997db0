// What every run step shares: the fenced write (epoch and unexpired lease), the lease check before a
// call, and the ends of a run (a release, or losing the lease).
import { doubt, hasWork, nothingSent, viewOf } from './facts.ts';
import type { ErrorKind, Happening, Job, Model, Options, Pc, Row, Run, Step } from './types.ts';

export const runOf = (m: Model): Run => {
  if (!m.run) throw new Error('no run in progress');
  return m.run;
};

/** The run's writes pass only while its epoch is the row's and the lease is unexpired. */
export const fenced = (m: Model): boolean => runOf(m).holds && m.row.leaseLive;

/** A write that extends the lease: the row changes, the run's view is what the write returned, and it goes on at `pc`. */
export function extendWrite(op: string, m: Model, patch: Partial<Row>, pc: Pc = { at: 'step' }): Step {
  if (!fenced(m)) return leaseLost(op, m);
  const row = { ...m.row, ...patch };
  return { op, next: { ...m, row, run: { ...runOf(m), view: viewOf(row), pc } }, happened: [] };
}

/** After the run: a job that must try again goes back to the queue; one whose batch is at rest is done. */
function jobAfter(job: Job, row: Row, again: boolean, opts: Options = {}): Job {
  if (job !== 'active') return job;
  return again || hasWork(row, opts) ? 'queued' : 'none';
}

/**
 * A write that releases the lease, which ENDS the run whatever state it leaves (unless the bug
 * releaseDoesNotEndRun: the run goes on, its clock still saying it holds the lease).
 */
export function releaseWrite(op: string, m: Model, patch: Partial<Row>, again: boolean, opts: Options): Step {
  if (!fenced(m)) return leaseLost(op, m);
  const row = { ...m.row, ...patch, leaseLive: false };
  if (opts.bug === 'releaseDoesNotEndRun' && !again) {
    return { op, next: { ...m, row, run: { ...runOf(m), view: viewOf(row), pc: { at: 'step' } } }, happened: [] };
  }
  return { op, next: { ...m, row, run: null, job: jobAfter(m.job, row, again, opts) }, happened: [] };
}

/** A write (or a call's lease check) that finds the lease gone: the run stops, its job tries again later. */
export function leaseLost(op: string, m: Model): Step {
  return { op: `${op} → lease lost, run stops`, next: { ...m, run: null, job: jobAfter(m.job, m.row, true) }, happened: [] };
}

/**
 * A remote call: the run's own clock is checked first (it cannot see a fence by epoch); the call is
 * recorded with whether the lease was really live and the run's. Each outcome leads to `pc`.
 */
export function call(op: string, m: Model, what: 'add' | 'list' | 'edit' | 'get', outcomes: readonly Outcome[]): Step[] {
  const run = runOf(m);
  if (!run.local) return [leaseLost(op, m)];
  const sent: Happening = { kind: 'call', op: what, leaseLive: run.holds && m.row.leaseLive };
  return outcomes.map((o) => {
    const next: Model = { ...m, remote: o.remote ?? m.remote, run: { ...run, pc: o.pc }, budget: o.fault ? spendFault(m) : m.budget };
    return { op: `${op}: ${o.label}`, next, happened: o.notSent ? [] : [sent, ...(o.happened ?? [])] };
  });
}

export interface Outcome {
  readonly label: string;
  readonly pc: Pc;
  /** A fault: spends the fault budget (and is left out of fault-free searches). */
  readonly fault: boolean;
  readonly remote?: Model['remote'];
  readonly happened?: readonly Happening[];
  /** The request never left (nothing to record as a call). */
  readonly notSent?: boolean;
}

const spendFault = (m: Model) => ({ ...m.budget, faults: m.budget.faults - 1 });

/** The outcomes the search may explore now: faults only while the budget lasts, none in a fault-free search. */
export const allowed = (m: Model, opts: Options, outcomes: Outcome[]): Outcome[] =>
  outcomes.filter((o) => !o.fault || (!opts.faultFree && m.budget.faults > 0));

/** The last step of a run short of rest (the design: a run that ends short of rest releases its lease). */
export function endSteps(m: Model, pc: Extract<Pc, { at: 'end' }>, opts: Options): Step[] {
  const kind: ErrorKind | null = pc.kind;
  switch (pc.action) {
    case 'delay':
      return [releaseWrite('run: release (delay)', m, {}, true, opts)];
    case 'outlast':
      return [releaseWrite(`run: release (outlast ${kind})`, m, { lastErrorKind: kind }, true, opts)];
    case 'retry':
      return [releaseWrite(`run: release (retry ${kind})`, m, { lastErrorKind: kind }, true, opts), failWrite(`run: last attempt (${kind})`, m, kind, opts)];
    case 'fail':
      return [failWrite(`run: fail (${kind})`, m, kind, opts)];
  }
}

/** `failed`, but in doubt `needs_review` (a batch that may have a class is never written off), and see failedState. */
function failWrite(op: string, m: Model, kind: ErrorKind | null, opts: Options): Step {
  return releaseWrite(op, m, { ...failedState(m.row, opts), lastErrorKind: kind }, false, opts);
}

/**
 * Where a failure leaves a batch. Beyond the design's first draft (MODEL FINDING 1): a batch the integrator
 * cancelled with nothing sent ends `cancelled`, not `failed` (cancel in doubt, then the add-class
 * refused: forgetCreate → pending, then the refusal would fail a batch nobody wants any more).
 */
export function failedState(r: Row, opts: Options): Pick<Row, 'state' | 'appliedRevision'> {
  if (doubt(r)) return { state: 'needs_review', appliedRevision: r.appliedRevision };
  if (r.cancelled && nothingSent(r) && opts.bug !== 'failIgnoresUnsentCancel') return { state: 'cancelled', appliedRevision: r.revision };
  return { state: 'failed', appliedRevision: r.appliedRevision };
}
