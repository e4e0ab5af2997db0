// The canonical key of a model state, for the search's dedup: every fact as a short token, with
// revisions replaced by their rank (the model compares revisions only by order and equality, so two
// states that differ only in how far revisions have climbed behave alike).
import type { Model, Pc, Values } from './types.ts';

const vals = (v: Values | null): string => (v ? v.name + v.subject : '--');
const opt = (x: string | number | null): string => (x === null ? '-' : String(x));
const bit = (b: boolean): string => (b ? '1' : '0');

function revisionsOf(m: Model): number[] {
  const found = [m.row.revision, m.row.appliedRevision];
  if (m.row.refusedRevision !== null) found.push(m.row.refusedRevision);
  if (m.run) {
    found.push(m.run.view.revision, m.run.view.appliedRevision);
    if (m.run.pc.at === 'edited') found.push(m.run.pc.revision);
  }
  return [...new Set(found)].sort((a, b) => a - b);
}

function pcKey(pc: Pc, rank: (r: number) => number): string {
  switch (pc.at) {
    case 'added':
    case 'listed':
      return `${pc.at}:${pc.outcome}:${pc.id}`;
    case 'edited':
      return `edited:${pc.outcome}:${rank(pc.revision)}:${vals(pc.values)}:${opt(pc.name)}`;
    case 'archived':
      return `archived:${bit(pc.gone)}`;
    case 'end':
      return `end:${pc.action}:${opt(pc.kind)}`;
    default:
      return pc.at;
  }
}

/** The key; `withBudget` false leaves the budgets out (the liveness search spends none). */
export function keyOf(m: Model, withBudget = true): string {
  const revisions = revisionsOf(m);
  const rank = (r: number) => revisions.indexOf(r);
  const r = m.row;
  const row = [
    r.state,
    opt(r.classId),
    bit(r.sent) + bit(r.cancelled) + bit(r.archived) + bit(r.linkEnabled) + bit(r.leaseLive),
    rank(r.revision),
    rank(r.appliedRevision),
    r.refusedRevision === null ? '-' : rank(r.refusedRevision),
    vals(r.event),
    vals(r.applied),
    r.className + opt(r.nextClassName),
    opt(r.abandonedFrom),
    opt(r.lastErrorKind),
  ].join(',');
  const remote = m.remote.map((c) => c.name + c.subject + bit(c.archived) + bit(c.deleted) + bit(c.link)).join('.');
  const run = m.run
    ? [
        bit(m.run.holds) + bit(m.run.local),
        m.run.view.state,
        opt(m.run.view.classId),
        bit(m.run.view.cancelled) + bit(m.run.view.archived),
        rank(m.run.view.revision),
        rank(m.run.view.appliedRevision),
        vals(m.run.view.event),
        m.run.view.className + opt(m.run.view.nextClassName),
        pcKey(m.run.pc, rank),
      ].join(',')
    : '';
  const last = m.last ? m.last.type + opt(m.last.name) + opt(m.last.subject) : '';
  const budget = withBudget ? `${m.budget.faults}${m.budget.changes}${m.budget.operator}` : '';
  return `${row}|${remote}|${run}|${m.job}|${last}|${budget}`;
}
