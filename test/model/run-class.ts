// The steps of a run once its batch has a class: a change first (edit-class with what the class
// lacks, or the archive of a cancelled batch), then the join link (the design: A run).
import { viewOf } from './facts.ts';
import { type Outcome, allowed, call, extendWrite, releaseWrite, runOf } from './run-core.ts';
import type { Model, Options, Pc, RemoteClass, Row, Step } from './types.ts';

const DELAY: Pc = { at: 'end', action: 'delay', kind: null };
const LOST: Pc = { at: 'end', action: 'retry', kind: 'lost' };
const REFUSED: Pc = { at: 'end', action: 'fail', kind: 'refused' };
const GONE: Pc = { at: 'end', action: 'fail', kind: 'gone' };

/** The answers a call on the stored class may get: ok and its faults, or for a deleted class 404 (gone). */
function classOutcomes(m: Model, effect: (c: RemoteClass) => RemoteClass, ok: Pc, refused: Pc, gone: Pc): Outcome[] {
  const id = runOf(m).view.classId;
  const c = id === null ? undefined : m.remote[id];
  if (id === null || !c) throw new Error('a class step without a class');
  const acted = m.remote.map((x, i) => (i === id ? effect(x) : x));
  if (c.deleted) {
    return [
      { label: '404, class gone (past the read-lag patience)', pc: gone, fault: false },
      { label: '404 within the read-lag window', pc: DELAY, fault: true },
      { label: 'answer lost', pc: LOST, fault: true },
    ];
  }
  return [
    { label: 'ok', pc: ok, fault: false, remote: acted },
    { label: 'answer lost after the remote acted', pc: LOST, fault: true, remote: acted },
    { label: 'refused', pc: refused, fault: true },
    { label: '404 within the read-lag window (not yet readable)', pc: DELAY, fault: true },
  ];
}

/**
 * edit-class with what the class lacks: the waiting name, a changed subject, being listed again. It
 * reads the row first, and (MODEL FINDING 3) decides again from that read: cancelled meanwhile, it
 * archives instead. Else markEdited's appliedRevision := (the revision read) would mark the
 * cancel's revision applied without an archive, and a synced batch would rest cancelled with a visible class.
 */
export function editStep(m: Model, opts: Options): Step[] {
  const row = m.row;
  if (row.cancelled && opts.bug !== 'editAppliesCancel') return archiveStep(m, opts);
  const applied = row.applied ?? row.event;
  // What the remote refused at this revision is not sent again (only with `refusalResends`, whose
  // refusal does not mark its revision applied, is an edit of the same revision made again).
  const resend = opts.bug === 'refusalResends' || row.refusedRevision !== row.revision;
  const name = resend ? row.nextClassName : null;
  // MODEL FINDING 7: appliedEvent is stale after an edit that landed unrecorded (answer lost, worker
  // killed before markEdited); a change back to its subject would be "nothing to send". With a change
  // due, the subject is always sent (edit-class is idempotent), as a waiting rename always is.
  const subjectDue = row.event.subject !== applied.subject || (row.revision > row.appliedRevision && opts.bug !== 'editDiffsStaleApplied');
  const subject = resend && subjectDue ? row.event.subject : null;
  const unarchive = row.archived;
  const done: Pc = { at: 'edited', outcome: 'ok', revision: row.revision, values: { name: name ?? row.className, subject: subject ?? applied.subject }, name };
  if (name === null && subject === null && !unarchive) {
    return [{ op: 'run: edit (the class lacks nothing)', next: { ...m, run: { ...runOf(m), pc: done } }, happened: [] }];
  }
  const effect = (c: RemoteClass): RemoteClass => ({ ...c, name: name ?? c.name, subject: subject ?? c.subject, archived: unarchive ? false : c.archived });
  // MODEL FINDING 8: a class that cannot be listed again is not a working class: a refused edit that
  // carried archived:false fails the batch (an operator's), as a refused archive does.
  const refused: Pc = unarchive && opts.bug !== 'refusedUnarchiveKept' ? REFUSED : { ...done, outcome: 'refused' };
  const resendsRefused = (name !== null || subject !== null) && row.refusedRevision === row.revision;
  const outcomes = classOutcomes(m, effect, done, refused, GONE).map((o) => ({ ...o, happened: [{ kind: 'edit', resendsRefused } as const] }));
  return call(
    `run: edit-class${name ? ` name ${name}` : ''}${subject ? ` subject ${subject}` : ''}${unarchive ? ' archived:false' : ''}`,
    m,
    'edit',
    allowed(m, opts, outcomes),
  );
}

/**
 * markEdited: the class carries what was sent (appliedEvent is what it carries, so a refused part
 * stays out of it); or markEditRefused: marked applied as refused, the state kept, the refusal recorded for
 * its revision (refusedRevision, MODEL FINDING 6: lastErrorKind alone is overwritten by later errors).
 */
export function editedWrite(m: Model, pc: Extract<Pc, { at: 'edited' }>, opts: Options): Step {
  const row = m.row;
  const nextClassName = row.revision === pc.revision ? null : row.nextClassName;
  if (pc.outcome === 'ok') {
    return extendWrite('run: markEdited', m, {
      appliedRevision: pc.revision,
      applied: pc.values,
      className: pc.name ?? row.className,
      nextClassName,
      archived: false,
    });
  }
  if (opts.bug === 'refusedEditFails') return releaseWrite('run: markEditRefused → failed', m, { state: 'failed', lastErrorKind: 'edit_refused' }, false, opts);
  // MODEL FINDING 5: the refusal marks its revision applied, so what was refused is not sent again and again.
  const appliedRevision = opts.bug === 'refusalResends' ? row.appliedRevision : pc.revision;
  const refusal = { appliedRevision, nextClassName, lastErrorKind: 'edit_refused', refusedRevision: pc.revision } as const;
  return extendWrite('run: markEditRefused', m, { ...refusal, ...carried(m, opts) });
}

/**
 * What the class carries after a refused edit. The first draft kept appliedEvent and className; but an
 * earlier edit whose answer was lost may have landed, and a refusal of its re-send proves nothing
 * about the class (MODEL FINDING 4). The model's fix: read the class (get-class) and record what it
 * carries; `refusalKeepsApplied` is the design as written.
 */
function carried(m: Model, opts: Options): Partial<Row> {
  const id = m.row.classId;
  const c = id === null ? undefined : m.remote[id];
  if (!c || opts.bug === 'refusalKeepsApplied') return {};
  return { className: c.name, applied: { name: c.name, subject: c.subject } };
}

/** The archive of a cancelled batch's class; the row is read again first, and a reopened batch is not archived. */
export function archiveStep(m: Model, opts: Options): Step[] {
  const row = m.row;
  if (!row.cancelled)
    return [{ op: 'run: archive re-reads the row: reopened, no archive', next: { ...m, run: { ...runOf(m), view: viewOf(row) } }, happened: [] }];
  const archived: Pc = { at: 'archived', gone: false };
  const refused = opts.bug === 'archiveRefusedEndsCancelled' ? archived : REFUSED;
  const gone = opts.bug === 'archiveGoneFails' ? GONE : ({ at: 'archived', gone: true } as const);
  const outcomes = classOutcomes(m, (c) => ({ ...c, archived: true }), archived, refused, gone);
  return call('run: edit-class archived:true', m, 'edit', allowed(m, opts, outcomes));
}

/** markCancelled: cancelled if still cancelled, else (reopened meanwhile) archivedAt set and the state kept. Releases. */
export function archivedWrite(m: Model, pc: Extract<Pc, { at: 'archived' }>, opts: Options): Step {
  if (m.row.cancelled) {
    return releaseWrite(
      `run: markCancelled → cancelled${pc.gone ? ' (class gone)' : ''}`,
      m,
      { state: 'cancelled', appliedRevision: m.row.revision, archived: !pc.gone },
      false,
      opts,
    );
  }
  return releaseWrite('run: markCancelled, reopened meanwhile: archivedAt set, state kept', m, { archived: true }, false, opts);
}

export function enableCall(m: Model, opts: Options): Step[] {
  const outcomes = classOutcomes(m, (c) => ({ ...c, link: true }), { at: 'enabled' }, REFUSED, GONE);
  return call('run: edit-class enableJoinMagicLink', m, 'edit', allowed(m, opts, outcomes));
}

export function getCall(m: Model, opts: Options): Step[] {
  const outcomes = classOutcomes(m, (c) => c, { at: 'got' }, REFUSED, GONE);
  return call('run: get-class', m, 'get', allowed(m, opts, outcomes));
}
