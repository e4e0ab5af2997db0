// A model of ONE batch and the remote, small, pure and executable: the doubt rule and every path
// that moves a batch (docs/reliability.md, "The doubt rule"), written again from that design, not
// from src/ (it must not agree with the product's bugs). test/model/explore.ts searches it breadth-first.
//
// A state is the row's facts, the remote's classes of the batch, at most one run (its step and its
// view), the job, and the outbox's newest message. A step is one atomic thing: an intake event, one
// step of a run (the lease grant, a remote call with one outcome, a fenced write), an operator's
// action, reconciliation, the sweep, or a fault. Anything may happen between two steps of a run.
//
// Bounds (keep the state space finite; see Budget): the integrator sends at most `changes` events
// after batch.created (renames among A|B|C, subject x|y, cancel, reopen); at most `faults` faults
// (each non-ok call outcome, a worker killed, a lease run out, a stalled job's last attempt, the
// class deleted); at most `operator` abandon / undo / --confirm-no-class. An operator's retry, runs with ok
// outcomes, reconciliation and the sweep are unbounded. Revisions are compared only by order, so
// the search's key ranks them (explore.ts) and reconciliation may bump them without bound.
// At most one run is in progress: a stalled job may be redelivered (and fail its last attempt
// before a lease) while the first run goes on, but no second run starts until the first is gone.
// The job's attempts are not counted: a retry-kind error may be the last attempt or not, both explored.
// The lease epoch is abstract: Run.holds says whether the run's epoch is still the row's.
// Remote drift deletes only the stored class (a class deleted while in doubt would make a second
// add-class right, and invariant 1 counts deleted classes). batch.created is the initial state.
//
// Where the search found the design's first draft wanting, the model follows the rule it found right, marked
// MODEL FINDING n where it is written; the design as written stays reachable as a bug switch, so a
// test shows its counterexample: 1 failedState (failIgnoresUnsentCancel), 2 noClass
// (noClassKeepsNext), 3 editStep (editAppliesCancel), 4 carried (refusalKeepsApplied), 5 editStep
// (refusalResends), 6 editedWrite (refusalOnlyInLastError), 7 editStep (editDiffsStaleApplied),
// 8 editStep (refusedUnarchiveKept).
import { intakeSteps } from './intake.ts';
import { abandon, faults, noClass, reconcile, retry, sweep, undo } from './outside.ts';
import { triggered } from './outbox.ts';
import { runSteps } from './run.ts';
import type { Budget, Model, Options, Step } from './types.ts';

export type { Bug, Model, Options, Step } from './types.ts';
export { goal, brokenBySteps, brokenByState, INVARIANTS, type Broken, type InvariantName } from './invariants.ts';

export const DEFAULT_BUDGET: Budget = { faults: 2, changes: 2, operator: 2 };

/** Right after batch.created: pending, name A, subject x, a job queued, nothing sent. */
export function initial(budget: Budget = DEFAULT_BUDGET): Model {
  const event = { name: 'A', subject: 'x' } as const;
  return {
    row: {
      state: 'pending',
      classId: null,
      sent: false,
      cancelled: false,
      revision: 0,
      appliedRevision: 0,
      event,
      applied: null,
      className: 'A',
      nextClassName: null,
      archived: false,
      linkEnabled: false,
      abandonedFrom: null,
      lastErrorKind: null,
      refusedRevision: null,
      leaseLive: false,
    },
    remote: [],
    run: null,
    job: 'queued',
    last: null,
    budget,
  };
}

/** Every step from `m` (fault-free ones only with opts.faultFree), each with the outbox trigger applied. */
export function successors(m: Model, opts: Options = {}): Step[] {
  const steps = [...runSteps(m, opts), ...retry(m), ...sweep(m, opts)];
  if (!opts.faultFree) steps.push(...intakeSteps(m, opts), ...abandon(m), ...undo(m, opts), ...noClass(m, opts), ...reconcile(m, opts), ...faults(m, opts));
  return steps.map((s) => ({ ...s, next: { ...s.next, last: triggered(m.row, s.next, s.op.startsWith('operator: undo'), opts) } }));
}
