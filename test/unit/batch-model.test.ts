// The batch model of the doubt rule (test/model/): an exhaustive breadth-first search of one batch and
// the remote finds no violation of the invariants; and the checker has teeth: each deliberately
// broken rule (a "bug switch", among them the eight historic defects) yields a counterexample path.
// MODEL_DEPTH raises the depth; MODEL_FAULTS, MODEL_CHANGES and MODEL_OPERATOR the bounds.
import { describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET, type InvariantName } from '../model/batch-model.ts';
import { type ExploreOptions, type ExploreResult, explore } from '../model/explore.ts';
import type { Budget, Bug } from '../model/types.ts';

/** Deep enough for the whole state space at the default bounds (it runs out of new states at 25). */
const DEPTH = Number(process.env.MODEL_DEPTH ?? 30);
const BUDGET: Budget = {
  faults: Number(process.env.MODEL_FAULTS ?? DEFAULT_BUDGET.faults),
  changes: Number(process.env.MODEL_CHANGES ?? DEFAULT_BUDGET.changes),
  operator: Number(process.env.MODEL_OPERATOR ?? DEFAULT_BUDGET.operator),
};

function describeViolation(result: ExploreResult): string {
  const v = result.violation;
  if (!v) return 'no violation';
  return [`${v.invariant}: ${v.message}`, ...v.path.map((op, i) => `  ${i + 1}. ${op}`)].join('\n');
}

describe('the batch model of the doubt rule', () => {
  it(`finds no violation in any interleaving to depth ${DEPTH} (bounds ${JSON.stringify(BUDGET)})`, () => {
    const result = explore({ depth: DEPTH, budget: BUDGET });
    console.log(
      `batch model: ${result.states} states, ${result.transitions} transitions, depth ${result.depth}` +
        `${result.complete ? ' (every reachable state)' : ''}, liveness searched ${result.livenessStates} more, ${result.ms} ms`,
    );
    expect(result.violation, describeViolation(result)).toBeNull();
    expect(result.depth).toBeGreaterThanOrEqual(Math.min(DEPTH, 8));
    expect(result.states).toBeGreaterThan(1000);
  }, 120_000);
});

interface Teeth {
  readonly bug: Bug;
  /** The invariant that must catch it. */
  readonly caught: InvariantName;
  /** Only these are checked: to look past an earlier catch at the defect's own consequence. */
  readonly only?: readonly InvariantName[];
  /** Smaller bounds where they suffice (faster). */
  readonly budget?: Budget;
  /** A step the counterexample must contain (its beginning). */
  readonly shows?: string;
}

const SMALL: Budget = { faults: 1, changes: 2, operator: 2 };
const NO_OPERATOR: Budget = { faults: 1, changes: 2, operator: 0 };
const TWO_FAULTS: Budget = { faults: 2, changes: 1, operator: 0 };

/** The eight historic defects of the design's spirit, each as a broken rule of the model. */
const HISTORIC: readonly Teeth[] = [
  // (1) cancel in doubt → cancelled, then a reopen → pending → a second add-class.
  { bug: 'cancelInDoubtEndsCancelled', caught: 'facts' },
  { bug: 'cancelInDoubtEndsCancelled', caught: 'noAddWhileMayExist', only: ['oneClass', 'noAddWhileMayExist'], budget: NO_OPERATOR, shows: 'intake: rename' },
  // (2) a rename while failed stored only as nextClassName, and the retry's add-class sends the old name.
  { bug: 'renameWhileFailedAsNext', caught: 'facts' },
  { bug: 'renameWhileFailedAsNext', caught: 'syncedNewest', only: ['syncedNewest'], budget: NO_OPERATOR, shows: 'operator: retry → pending' },
  // (3) exhaustion outside a run writes while a run holds the lease; a rename of the failed batch then
  // is not fenced, and the run's add-class sends its old values.
  { bug: 'exhaustIgnoresLease', caught: 'facts' },
  {
    bug: 'exhaustIgnoresLease',
    caught: 'syncedNewest',
    only: ['syncedNewest'],
    budget: NO_OPERATOR,
    shows: 'fault: the job’s last attempt fails before it holds a lease',
  },
  // (4) a write that released the lease does not end the run: its next call has no lease.
  { bug: 'releaseDoesNotEndRun', caught: 'leaseForCalls', budget: NO_OPERATOR },
  // (5) archive 404 → failed: a cancelled batch whose class is gone never ends cancelled.
  { bug: 'archiveGoneFails', caught: 'liveness', budget: SMALL, shows: 'fault: the class is deleted on the remote' },
  // (6) batch.updated tells values the class does not carry; a refused edit fails a synced batch.
  { bug: 'updatedTellsEvent', caught: 'lastWord', budget: SMALL },
  { bug: 'refusedEditFails', caught: 'facts', budget: SMALL },
  // (7) a cancel while abandoned is lost after the undo.
  { bug: 'undoIgnoresCancel', caught: 'wish', budget: SMALL, shows: 'operator: undo → failed' },
  // (8) abandon, rename, undo: the rename is lost.
  { bug: 'renameWhileAbandonedLost', caught: 'syncedNewest', budget: SMALL, shows: 'operator: undo → pending' },
];

/** More broken rules: one per invariant kind not caught above, and the design-as-written variants of the model's findings. */
const MORE: readonly Teeth[] = [
  { bug: 'archiveRefusedEndsCancelled', caught: 'cancelledHidden', budget: SMALL },
  { bug: 'sweepSkipsChangeDue', caught: 'liveness', budget: SMALL },
  // Finding 1: cancel in doubt, the add-class refused: the first draft's refusal fails a batch nobody wants.
  { bug: 'failIgnoresUnsentCancel', caught: 'wish', budget: SMALL },
  // Finding 2: abandon --no-class leaves the waiting rename with no class and no doubt.
  { bug: 'noClassKeepsNext', caught: 'facts', budget: { faults: 2, changes: 1, operator: 2 } },
  // Finding 3: an edit that read a cancel settles its revision without an archive.
  { bug: 'editAppliesCancel', caught: 'wish', budget: SMALL },
  // Finding 4: a refused re-send of an edit that had landed: the row keeps values the class no longer carries.
  { bug: 'refusalKeepsApplied', caught: 'syncedNewest', budget: TWO_FAULTS },
  // Finding 5: a refused edit that does not settle its revision is sent again (and again).
  { bug: 'refusalResends', caught: 'refusalIsFinal', budget: NO_OPERATOR },
  // Finding 6: a refusal recorded only in lastErrorKind is overwritten by a later error.
  { bug: 'refusalOnlyInLastError', caught: 'syncedNewest', budget: TWO_FAULTS },
  // Finding 7: an edit that landed unrecorded, then a change back: the subject is never sent.
  { bug: 'editDiffsStaleApplied', caught: 'syncedNewest', budget: NO_OPERATOR },
  // Finding 8: a refused unarchive kept as a refusal: the batch rests synced with its class hidden.
  { bug: 'refusedUnarchiveKept', caught: 'syncedNewest', budget: { faults: 2, changes: 2, operator: 0 } },
];

function expectCaught(t: Teeth): void {
  const options: ExploreOptions = { depth: 40, bug: t.bug, budget: t.budget ?? DEFAULT_BUDGET, ...(t.only ? { invariants: t.only } : {}) };
  const result = explore(options);
  const v = result.violation;
  console.log(
    `bug ${t.bug}${t.only ? ` (checking ${t.only.join(', ')})` : ''}: ${v ? `${v.invariant} after ${v.path.length} steps` : 'NOT CAUGHT'}, ${result.states} states`,
  );
  expect(v?.invariant, describeViolation(result)).toBe(t.caught);
  if (t.shows)
    expect(
      v?.path.some((op) => op.startsWith(t.shows ?? '')),
      `a step ${t.shows}\n${describeViolation(result)}`,
    ).toBe(true);
}

describe('the checker catches a broken rule', () => {
  it.each(HISTORIC.map((t) => [`${t.bug} → ${t.caught}`, t] as const))('historic defect %s', (_, t) => expectCaught(t), 60_000);
  it.each(MORE.map((t) => [`${t.bug} → ${t.caught}`, t] as const))('%s', (_, t) => expectCaught(t), 60_000);

  it('a counterexample is the shortest path: cancel in doubt reaches cancelled in three steps', () => {
    const result = explore({ depth: 10, bug: 'cancelInDoubtEndsCancelled' });
    expect(result.violation?.path).toEqual(['run: lease granted', 'run: write intent (creating)', 'intake: cancelled']);
  });
});
