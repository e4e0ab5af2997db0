// Everything outside a run and intake: operators (retry, abandon, undo, --confirm-no-class), reconciliation,
// the sweep, and the faults of the world (a worker killed, a lease run out, a stalled job's last
// attempt failing before it held a lease, the class deleted on the remote).
import { TERMINAL, doubt, listed, enqueue, hasWork, queueIfWork, spend, storedClass } from './facts.ts';
import { failedState } from './run-core.ts';
import type { Model, Options, Row, State, Step } from './types.ts';

const step = (op: string, next: Model | null): Step[] => (next ? [{ op, next, happened: [] }] : []);

/** retry: failed / needs_review resume by facts; attempts 0, lane operator, a job queued. Abandoned batches are refused. */
export function retry(m: Model): Step[] {
  const r = m.row;
  if (r.state !== 'failed' && r.state !== 'needs_review') return [];
  const state: State = r.classId !== null ? (r.linkEnabled ? 'link_enabled' : 'created') : doubt(r) ? 'creating' : 'pending';
  return step(`operator: retry → ${state}`, { ...m, row: { ...r, state }, job: enqueue(m.job) });
}

/** abandon: pending / failed / needs_review without a class and without a live lease (allowed in doubt). */
export function abandon(m: Model): Step[] {
  const r = m.row;
  if (!['pending', 'failed', 'needs_review'].includes(r.state) || r.classId !== null || r.leaseLive) return [];
  return step(
    `operator: abandon (from ${r.state}${doubt(r) ? ', in doubt' : ''})`,
    spend({ ...m, row: { ...r, state: 'abandoned', abandonedFrom: r.state } }, 'operator'),
  );
}

/** abandon --undo: where the facts lead (cancelled, needs_review in doubt, else where it was abandoned from). */
export function undo(m: Model, opts: Options): Step[] {
  const r = m.row;
  if (r.state !== 'abandoned') return [];
  let row: Row;
  if (r.cancelled && !doubt(r) && opts.bug !== 'undoIgnoresCancel') row = { ...r, state: 'cancelled', appliedRevision: r.revision };
  else if (doubt(r)) row = { ...r, state: 'needs_review' };
  else row = { ...r, state: r.abandonedFrom === 'pending' ? 'pending' : 'failed' };
  const next = spend(queueIfWork({ ...m, row: { ...row, abandonedFrom: null } }, opts), 'operator');
  return step(`operator: undo → ${row.state}`, next);
}

/**
 * abandon --confirm-no-class: an operator who checked rules the class out (only when the remote truly has
 * none). Beyond the design's first draft (MODEL FINDING 2): like forgetCreate, the waiting rename becomes the name
 * the next add-class sends (else nextClassName stays set with no class and no doubt).
 */
export function noClass(m: Model, opts: Options): Step[] {
  const r = m.row;
  if (r.state !== 'abandoned' || !r.sent || m.remote.length > 0) return [];
  const name = opts.bug === 'noClassKeepsNext' ? {} : { className: r.nextClassName ?? r.className, nextClassName: null };
  return step('operator: abandon --confirm-no-class (sent cleared)', spend({ ...m, row: { ...r, sent: false, ...name } }, 'operator'));
}

/** Reconciliation: adopt a needs_review batch's single listed candidate; ask a cancelled batch's visible class to be archived again. */
export function reconcile(m: Model, opts: Options): Step[] {
  const r = m.row;
  const found = listed(m);
  if (r.state === 'needs_review' && r.classId === null && found.length === 1) {
    return step(`reconcile: adopt #${found[0]} → created`, { ...m, row: { ...r, classId: found[0]!, state: 'created' }, job: enqueue(m.job) });
  }
  const c = storedClass(m);
  if (r.state === 'cancelled' && c && !c.archived && !c.deleted) {
    return step('reconcile: cancelled_visible → a change', queueIfWork({ ...m, row: { ...r, revision: r.revision + 1 } }, opts));
  }
  return [];
}

/** The sweep requeues a batch with work and no live lease or job. */
export function sweep(m: Model, opts: Options): Step[] {
  const work = opts.bug === 'sweepSkipsChangeDue' ? !TERMINAL.has(m.row.state) : hasWork(m.row, opts);
  if (m.job !== 'none' || m.row.leaseLive || !work) return [];
  return step('sweep: requeue', { ...m, job: 'queued' });
}

/** The world's faults, each spending the fault budget. */
export function faults(m: Model, opts: Options): Step[] {
  const spent = spend(m, 'faults');
  if (!spent) return [];
  const steps: Step[] = [];
  if (m.run) {
    const run = m.run;
    const job = m.job === 'active' ? 'queued' : m.job;
    steps.push(
      ...step('fault: worker killed (its lease expires)', { ...spent, run: null, job, row: { ...m.row, leaseLive: run.holds ? false : m.row.leaseLive } }),
    );
    if (run.local)
      steps.push(
        ...step('fault: lease runs out under a frozen run', {
          ...spent,
          run: { ...run, local: false },
          row: { ...m.row, leaseLive: run.holds ? false : m.row.leaseLive },
        }),
      );
  }
  if (m.job !== 'none') steps.push(...step('fault: the job’s last attempt fails before it holds a lease', exhausted(spent, opts)));
  const c = storedClass(m);
  if (c && !c.deleted)
    steps.push(
      ...step('fault: the class is deleted on the remote', { ...spent, remote: m.remote.map((x, i) => (i === m.row.classId ? { ...x, deleted: true } : x)) }),
    );
  return steps;
}

/** markExhausted outside a run: writes only when no live lease is held; in doubt needs_review, not failed. */
function exhausted(m: Model, opts: Options): Model {
  const r = m.row;
  const job = 'none' as const;
  if (TERMINAL.has(r.state) || (r.leaseLive && opts.bug !== 'exhaustIgnoresLease')) return { ...m, job };
  return { ...m, job, row: { ...r, ...failedState(r, opts), lastErrorKind: 'exhausted' } };
}
