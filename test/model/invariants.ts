// The invariants of the doubt rule (docs/reliability.md), checked after every step of the model, and the goal of the liveness
// search. Numbers follow the design's list; two are this model's own: `wish` (9), its reading of
// intake's rules (at rest, the batch ends as the integrator last asked unless an operator holds it),
// and `refusalIsFinal` (10): a change the remote refused is done with, not sent again until a newer one.
import { atRest, doubt, nothingSent, storedClass } from './facts.ts';
import type { Happening, Model, Options } from './types.ts';

export type InvariantName =
  | 'oneClass'
  | 'noAddWhileMayExist'
  | 'leaseForCalls'
  | 'cancelledHidden'
  | 'syncedNewest'
  | 'lastWord'
  | 'liveness'
  | 'facts'
  | 'wish'
  | 'refusalIsFinal';
export const INVARIANTS: readonly InvariantName[] = [
  'oneClass',
  'noAddWhileMayExist',
  'leaseForCalls',
  'cancelledHidden',
  'syncedNewest',
  'lastWord',
  'liveness',
  'facts',
  'wish',
  'refusalIsFinal',
];

export interface Broken {
  readonly invariant: InvariantName;
  readonly message: string;
}

/** What a step did that breaks an invariant (2 and 3 are about calls, not states). */
export function brokenBySteps(happened: readonly Happening[]): Broken[] {
  return happened.flatMap((h): Broken[] => {
    if (h.kind === 'call' && !h.leaseLive) return [{ invariant: 'leaseForCalls', message: `${h.op} sent without a live lease of the run's epoch` }];
    if (h.kind === 'intent' && h.classMayExist)
      return [{ invariant: 'noAddWhileMayExist', message: 'add-class intent written while a class may exist (doubt or a stored class)' }];
    if (h.kind === 'add' && h.remoteHolds) return [{ invariant: 'noAddWhileMayExist', message: 'add-class sent while the remote holds a class of the batch' }];
    if (h.kind === 'edit' && h.resendsRefused)
      return [{ invariant: 'refusalIsFinal', message: 'edit-class sends again a change the remote refused at this revision' }];
    return [];
  });
}

/** Every invariant the state breaks (in the design's order). */
export function brokenByState(m: Model, opts: Options): Broken[] {
  const broken: Broken[] = [];
  if (m.remote.length > 1) broken.push({ invariant: 'oneClass', message: `${m.remote.length} classes made for one batch` });
  const facts = factsBroken(m);
  if (facts) broken.push({ invariant: 'facts', message: facts });
  if (atRest(m, opts)) broken.push(...restBroken(m, opts));
  return broken;
}

/** 8: the state/facts table, after every step. */
function factsBroken(m: Model): string | null {
  const r = m.row;
  const hasClass = r.classId !== null;
  const table: Record<string, boolean> = {
    pending: !hasClass && !r.sent,
    creating: !hasClass && doubt(r),
    created: hasClass,
    link_enabled: hasClass,
    synced: hasClass,
    failed: !doubt(r) && r.lastErrorKind !== 'edit_refused',
    needs_review: !hasClass && doubt(r),
    abandoned: !hasClass,
    cancelled: !doubt(r),
  };
  if (!table[r.state]) return `${r.state} with classId ${r.classId}, sent ${r.sent}, lastErrorKind ${r.lastErrorKind}`;
  // An operator holds these: no runner may (markExhausted and the run's fail write release; abandon needs no live lease).
  if (r.leaseLive && (r.state === 'failed' || r.state === 'needs_review' || r.state === 'abandoned')) return `${r.state} with a live lease`;
  if (r.nextClassName !== null && !hasClass && !doubt(r)) return `nextClassName ${r.nextClassName} set with no class and no doubt (${r.state})`;
  return null;
}

/** 4, 5, 6 and 9: at rest. */
function restBroken(m: Model, opts: Options): Broken[] {
  const r = m.row;
  const broken: Broken[] = [];
  const add = (invariant: InvariantName, message: string | null) => message && broken.push({ invariant, message });
  add('cancelledHidden', r.state === 'cancelled' && m.remote.some((x) => !x.archived && !x.deleted) ? 'cancelled at rest with a visible class' : null);
  add('syncedNewest', r.state === 'synced' ? syncedBroken(m, opts) : null);
  add('lastWord', lastWordBroken(m));
  add('wish', r.state === 'synced' && r.cancelled ? 'synced at rest though cancelled' : null);
  const unsentCancel = r.cancelled && nothingSent(r) && r.state !== 'cancelled' && r.state !== 'abandoned';
  add('wish', unsentCancel ? `${r.state} at rest: cancelled with nothing sent` : null);
  return broken;
}

/** 5: synced at rest: the class carries what the row says, and that is the newest, unless refused. */
function syncedBroken(m: Model, opts: Options): string | null {
  const r = m.row;
  const c = storedClass(m);
  if (!c || !r.applied) return 'synced without a class or applied values';
  if (c.name !== r.className || c.subject !== r.applied.subject)
    return `the class carries ${c.name}/${c.subject}, the row says ${r.className}/${r.applied.subject}`;
  if (c.archived) return 'synced at rest with its class archived (hidden)';
  const newest = c.name === r.event.name && c.subject === r.event.subject;
  if (newest || refused(m, opts)) return null;
  return `synced: class ${c.name}/${c.subject}${c.archived ? ' archived' : ''}, newest ${r.event.name}/${r.event.subject}, no refusal recorded`;
}

/** 5's exception: the remote refused the newest change, and the row records it. */
function refused(m: Model, opts: Options): boolean {
  if (opts.bug === 'refusalOnlyInLastError') return m.row.lastErrorKind === 'edit_refused';
  return m.row.refusedRevision === m.row.revision;
}

/** 6: the newest message names the state at rest (and for synced, the values the class carries). */
function lastWordBroken(m: Model): string | null {
  const r = m.row;
  const last = m.last;
  if (!last) return `at rest in ${r.state} without a message`;
  const type = last.type === 'updated' ? 'synced' : last.type;
  if (type !== r.state) return `at rest in ${r.state}, last message batch.${last.type}`;
  if (r.state === 'synced' && (last.name !== r.className || last.subject !== r.applied?.subject)) {
    return `batch.${last.type} told ${last.name}/${last.subject}, the class carries ${r.className}/${r.applied?.subject}`;
  }
  return null;
}

/**
 * 7's goal: at rest as the integrator asked (cancelled if cancelled, else synced; failed only when
 * the class was deleted on the remote), or held by an operator's abandon.
 */
export function goal(m: Model, opts: Options): boolean {
  if (!atRest(m, opts)) return false;
  const r = m.row;
  if (r.state === 'abandoned') return true;
  if (r.cancelled) return r.state === 'cancelled';
  return r.state === 'synced' || (r.state === 'failed' && storedClass(m)?.deleted === true);
}
