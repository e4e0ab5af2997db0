// Intake in the model (the design: Intake): batch.updated (a rename or a subject change, or a
// reopening update of a cancelled batch) and batch.cancelled. Versions always increase in the model:
// a stale event changes nothing and is not explored.
import { doubt, fence, nothingSent, queueIfWork, spend } from './facts.ts';
import type { Model, Name, Options, Row, Step, Subject, Values } from './types.ts';

const NAMES: readonly Name[] = ['A', 'B', 'C'];

/** Every change the integrator may send now (while its budget lasts). */
export function intakeSteps(m: Model, opts: Options): Step[] {
  const spent = spend(m, 'changes');
  if (!spent) return [];
  const steps: Step[] = [];
  const { event } = m.row;
  for (const name of NAMES) if (name !== event.name) steps.push(change(`intake: rename to ${name}`, update(spent, { ...event, name }, opts)));
  const subject: Subject = event.subject === 'x' ? 'y' : 'x';
  steps.push(change(`intake: subject ${subject}`, update(spent, { ...event, subject }, opts)));
  if (m.row.cancelled || m.row.state === 'cancelled') steps.push(change('intake: reopen (same values)', update(spent, event, opts)));
  const cancelled = cancel(spent, opts);
  if (cancelled) steps.push(change('intake: cancelled', cancelled));
  return steps;
}

const change = (op: string, next: Model): Step => ({ op, next, happened: [] });

/** batch.updated with a higher version: reopen if cancelled, the newest values, the name where it goes. */
export function update(m: Model, values: Values, opts: Options): Model {
  const row = m.row;
  const reopening = row.cancelled || row.state === 'cancelled';
  let next: Row = { ...row, event: values, revision: row.revision + 1 };
  if (reopening) {
    next = { ...next, cancelled: false, archived: row.classId !== null ? true : row.archived };
    if (row.state === 'cancelled') next = { ...next, state: row.classId !== null ? 'created' : 'pending' };
  }
  next = { ...next, ...namePatch(row, values.name, opts) };
  const fenced = row.state === 'pending' || next.state === 'pending' ? fence({ ...m, row: next }) : { ...m, row: next };
  return queueIfWork(fenced, opts);
}

/** Where a new name goes: what the next add-class sends while nothing was sent, else a rename waiting for edit-class. */
function namePatch(row: Row, name: Name, opts: Options): Partial<Row> {
  if (nothingSent(row)) {
    if (opts.bug === 'renameWhileAbandonedLost' && row.state === 'abandoned') return {};
    if (opts.bug === 'renameWhileFailedAsNext' && row.state === 'failed') return name !== row.className || row.nextClassName ? { nextClassName: name } : {};
    return { className: name, nextClassName: null };
  }
  return name !== row.className || row.nextClassName !== null ? { nextClassName: name } : {};
}

/** batch.cancelled: at once while nothing was sent, else a change for a run (or kept for an operator). */
export function cancel(m: Model, opts: Options): Model | null {
  const row = m.row;
  if (row.cancelled || row.state === 'cancelled') return null;
  const revision = row.revision + 1;
  if (nothingSent(row)) {
    if (row.state === 'abandoned') return { ...m, row: { ...row, cancelled: true, revision } };
    return fence({ ...m, row: { ...row, state: 'cancelled', cancelled: true, revision, appliedRevision: revision } });
  }
  if (doubt(row)) {
    if (opts.bug === 'cancelInDoubtEndsCancelled')
      return fence({ ...m, row: { ...row, state: 'cancelled', cancelled: true, revision, appliedRevision: revision } });
    return queueIfWork({ ...m, row: { ...row, cancelled: true, revision } }, opts);
  }
  return queueIfWork({ ...m, row: { ...row, cancelled: true, revision, state: row.state === 'failed' ? 'created' : row.state } }, opts);
}
