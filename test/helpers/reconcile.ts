// One reconciliation pass of a harness, as most reconciliation tests want it: the default institute,
// nothing too recent to judge, no stuck threshold reached, no join-link checks; `options` override.
import { type ReconcileOptions, runReconciliation } from '../../src/reconcile/run.ts';
import { reconcileOptionsOf } from '../../src/reconcile/settings.ts';
import { reconcileDepsOf } from '../../src/reconcile/setup.ts';
import type { Harness } from './harness.ts';

export function reconcileOnce(h: Harness, options: Partial<ReconcileOptions> = {}) {
  return runReconciliation(reconcileDepsOf(h.runtime), {
    trigger: 'test',
    ...reconcileOptionsOf(h.config),
    stuckAfterMs: 60_000,
    graceMs: 0,
    linkChecks: 0,
    instituteIds: [h.config.classroom.instituteId],
    ...options,
  });
}
