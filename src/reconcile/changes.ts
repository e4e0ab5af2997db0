// What a batch that can change after creation adds to a pass: a synced class renamed on the remote
// (name_drift), and a cancelled batch's class that is not archived (cancelled_visible). Both only
// look at a batch whose changes have all been applied: while one waits (revision above
// applied_revision, or a name not sent yet), its sync run is about to edit the class anyway.
import { type NameRules, matchName } from '../sync/matching.ts';
import type { Listed } from './listing.ts';
import type { Mapping } from './mappings.ts';

/**
 * The name a synced class is listed under when it is not the batch's: neither its class name (equal
 * or a cut of it, the sync's own rule) nor the name the remote kept (equal after normalising).
 * Undefined when the name is ours, or cannot tell: a change pending, a class matched by name only
 * (an id-less listing), or one listed under pendingClasses.
 */
export function driftedName(m: Mapping, listed: Listed, byName: boolean, rules: NameRules): string | undefined {
  if (m.state !== 'synced' || m.changePending || byName || listed.list === 'pendingClasses') return undefined;
  const name = listed.item.name;
  // Almost every class is listed exactly as stored: no normalising for those.
  if (name === m.className || name === m.remoteName) return undefined;
  const match = matchName(m.className, name, rules);
  if (match === 'same' || match === 'cut') return undefined;
  if (m.remoteName && matchName(m.remoteName, name, rules) === 'same') return undefined;
  return name;
}

/** A cancelled batch whose class is listed under `classes`, with no archive (or other edit) waiting. */
export const visibleAfterCancel = (m: Mapping, listed: Listed): boolean => m.state === 'cancelled' && !m.changePending && listed.list === 'classes';

/** The detail of a name_drift finding. */
export function driftDetail(m: Mapping, listed: Listed, name: string): string {
  const kept = m.remoteName && m.remoteName !== m.className ? ` (kept by the remote as "${m.remoteName}")` : '';
  const hidden = listed.list === 'hiddenClasses' ? '; it is also archived on the remote' : '';
  return `listed as "${name}", not as its class name "${m.className}"${kept}${hidden}`;
}
