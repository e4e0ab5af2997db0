// The create steps of a run: add-class after the intent, and settling an add-class of unknown
// outcome from the listing (the design's A run: pending and creating).
import { listed, queueIfWork } from './facts.ts';
import { type Outcome, allowed, call, extendWrite, fenced, leaseLost, releaseWrite, runOf } from './run-core.ts';
import type { Happening, Model, Options, Pc, RemoteClass, Step } from './types.ts';

/** add-class with the name and subject the intent wrote; ok, its answer lost (made or not), refused, never sent. */
export function addCall(m: Model, opts: Options): Step[] {
  const v = runOf(m).view;
  const made: RemoteClass = { name: v.className, subject: v.event.subject, archived: false, deleted: false, link: false };
  const remote = [...m.remote, made];
  const id = m.remote.length;
  const happened: Happening[] = [{ kind: 'add', remoteHolds: m.remote.length > 0 }];
  const outcomes: Outcome[] = [
    { label: 'ok', pc: { at: 'added', outcome: 'ok', id }, fault: false, remote, happened },
    { label: 'answer lost after the remote made it', pc: { at: 'end', action: 'outlast', kind: 'lost' }, fault: true, remote, happened },
    { label: 'answer lost, nothing made', pc: { at: 'end', action: 'outlast', kind: 'lost' }, fault: true, happened },
    { label: 'refused (nothing made)', pc: { at: 'added', outcome: 'refused', id: -1 }, fault: true, happened },
    { label: 'never left', pc: { at: 'added', outcome: 'not_sent', id: -1 }, fault: true, notSent: true },
  ];
  return call('run: add-class', m, 'add', allowed(m, opts, outcomes));
}

/** After add-class: store the class (or claim it, the lease lost), or forget the create on proof nothing was made. */
export function addedWrite(m: Model, pc: Extract<Pc, { at: 'added' }>, opts: Options): Step {
  if (pc.outcome === 'ok') {
    if (!fenced(m)) return claimCreatedClass(m, pc.id, opts);
    return extendWrite(`run: store class #${pc.id} → created`, m, { classId: pc.id, state: 'created' });
  }
  const then: Pc = pc.outcome === 'refused' ? { at: 'end', action: 'fail', kind: 'refused' } : { at: 'end', action: 'outlast', kind: 'not_sent' };
  return forgetCreate(`run: forgetCreate (add-class ${pc.outcome})`, m, then);
}

/** Proof that nothing was made: back to pending, sent cleared, the waiting name becomes what the next add-class sends. */
function forgetCreate(op: string, m: Model, then: Pc): Step {
  const { nextClassName, className } = m.row;
  return extendWrite(op, m, { state: 'pending', sent: false, className: nextClassName ?? className, nextClassName: null }, then);
}

/**
 * A run that made a class after losing its lease stores it when no class is stored and the batch is
 * pending/creating/failed/needs_review/cancelled (cancelled → created keeping cancelledAt, so a run
 * archives it), and ends the current holder's lease. Else reconciliation reports an orphan.
 */
function claimCreatedClass(m: Model, id: number, opts: Options): Step {
  const claimable = ['pending', 'creating', 'failed', 'needs_review', 'cancelled'].includes(m.row.state);
  if (m.row.classId !== null || !claimable) return leaseLost(`run: class #${id} made after the lease was lost, not claimable (orphan)`, m);
  const claimed = queueIfWork({ ...m, row: { ...m.row, classId: id, state: 'created', leaseLive: false } }, opts);
  return leaseLost(`run: claimCreatedClass #${id} → created`, claimed);
}

/** A creating batch reads the listing. */
export function listCall(m: Model, opts: Options): Step[] {
  return call('run: listing', m, 'list', allowed(m, opts, listingOutcomes(m)));
}

/** After the listing: adopt the one candidate, forget the create (fresh and empty), or needs_review. */
export function listedWrite(m: Model, pc: Extract<Pc, { at: 'listed' }>, opts: Options): Step {
  switch (pc.outcome) {
    case 'one':
      return extendWrite(`run: adopt #${pc.id} → created`, m, { classId: pc.id, state: 'created' });
    case 'none':
      return forgetCreate('run: forgetCreate (listing settled: none)', m, { at: 'step' });
    case 'ambiguous':
      return releaseWrite('run: ambiguous → needs_review', m, { state: 'needs_review', lastErrorKind: 'ambiguous' }, false, opts);
  }
}

/** The truthful answer of a listing, and the faults it may meet. */
export function listingOutcomes(m: Model): Outcome[] {
  const found = listed(m);
  const truth: Outcome =
    found.length === 0
      ? { label: 'nothing listed, listing fresh', pc: { at: 'listed', outcome: 'none', id: -1 }, fault: false }
      : found.length === 1
        ? { label: `one candidate #${found[0]}`, pc: { at: 'listed', outcome: 'one', id: found[0]! }, fault: false }
        : { label: 'several candidates', pc: { at: 'listed', outcome: 'ambiguous', id: -1 }, fault: false };
  return [
    truth,
    { label: 'ambiguous', pc: { at: 'listed', outcome: 'ambiguous', id: -1 }, fault: true },
    { label: 'not yet readable (no evidence)', pc: { at: 'end', action: 'delay', kind: null }, fault: true },
    { label: 'refused (4xx)', pc: { at: 'end', action: 'retry', kind: 'listing_refused' }, fault: true },
    { label: 'lost (5xx)', pc: { at: 'end', action: 'outlast', kind: 'lost' }, fault: true },
  ];
}
