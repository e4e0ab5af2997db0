// A run of the model: the lease grant, then one atomic step at a time, chosen by the run's view of
// its batch (what it read at the grant and what each of its writes returned).
import { WITH_CLASS, changeDue, hasWork, viewOf } from './facts.ts';
import { addCall, addedWrite, listCall, listedWrite } from './run-create.ts';
import { archiveStep, archivedWrite, editStep, editedWrite, enableCall, getCall } from './run-class.ts';
import { endSteps, extendWrite, releaseWrite, runOf } from './run-core.ts';
import type { Model, Options, Step } from './types.ts';

/** Every step a run may take now, or the grant of a new one. */
export function runSteps(m: Model, opts: Options): Step[] {
  if (!m.run) return start(m, opts);
  const pc = runOf(m).pc;
  switch (pc.at) {
    case 'step':
      return dispatch(m, opts);
    case 'add':
      return addCall(m, opts);
    case 'added':
      return [addedWrite(m, pc, opts)];
    case 'listed':
      return [listedWrite(m, pc, opts)];
    case 'edited':
      return [editedWrite(m, pc, opts)];
    case 'archived':
      return [archivedWrite(m, pc, opts)];
    case 'enabled':
      return [extendWrite('run: write link_enabled', m, { state: 'link_enabled', linkEnabled: true })];
    case 'got':
      return [releaseWrite('run: write synced', m, { state: 'synced' }, false, opts)];
    case 'end':
      return endSteps(m, pc, opts);
  }
}

/** A queued job takes the lease (none live: at most one run at a time in the model) or finds nothing to do. */
function start(m: Model, opts: Options): Step[] {
  if (m.job !== 'queued' || m.row.leaseLive) return [];
  if (!hasWork(m.row, opts)) return [{ op: 'job: batch at rest, nothing to do', next: { ...m, job: 'none' }, happened: [] }];
  const row = { ...m.row, leaseLive: true };
  return [
    { op: 'run: lease granted', next: { ...m, row, job: 'active', run: { holds: true, local: true, view: viewOf(row), pc: { at: 'step' } } }, happened: [] },
  ];
}

/** The step the run's view calls for: a change first once a class exists, else by state. */
function dispatch(m: Model, opts: Options): Step[] {
  const v = runOf(m).view;
  if (v.cancelled && v.state === 'pending') {
    return [releaseWrite('run: cancelUnsent → cancelled', m, { state: 'cancelled', appliedRevision: m.row.revision }, false, opts)];
  }
  if (v.classId !== null && WITH_CLASS.has(v.state)) {
    if (v.cancelled && (v.state !== 'cancelled' || changeDue(v, opts))) return archiveStep(m, opts);
    if (!v.cancelled && (v.revision > v.appliedRevision || v.archived)) return editStep(m, opts);
  }
  switch (v.state) {
    case 'pending':
      return [intent(m, opts)];
    case 'creating':
      return listCall(m, opts);
    case 'created':
      return enableCall(m, opts);
    case 'link_enabled':
      return getCall(m, opts);
    default:
      return [releaseWrite(`run: nothing to do in ${v.state}, release`, m, {}, false, opts)];
  }
}

/** The intent, written (fenced) right before add-class: creating, sent, the values it carries. */
function intent(m: Model, opts: Options): Step {
  const v = runOf(m).view;
  const name = opts.bug === 'renameWhileFailedAsNext' ? v.className : (v.nextClassName ?? v.className);
  const patch = { state: 'creating', sent: true, appliedRevision: v.revision, applied: v.event, className: name, nextClassName: null } as const;
  const step = extendWrite('run: write intent (creating)', m, patch, { at: 'add' });
  if (step.next.run === null) return step;
  return { ...step, happened: [{ kind: 'intent', classMayExist: m.row.sent || m.row.classId !== null }] };
}
