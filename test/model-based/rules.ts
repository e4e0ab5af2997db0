// The doubt rule's per-path rules (docs/reliability.md), as pure checks of a batch row before and after one path moved it.
// Each returns what is wrong, or undefined. The facts are the design's: `sent` (an add-class was sent
// and nothing proved it made nothing), `doubt` (sent, no ClassID), `nothingSent` (neither).
import { TERMINAL_STATES } from '../../src/db/schema/index.ts';
import type { BatchRow, BatchState } from '../../src/db/schema/index.ts';
import { changeDue } from '../../src/mapping/index.ts';

export function factsOf(row: BatchRow) {
  const sent = row.createSentAt !== null;
  const hasClass = row.classId !== null;
  return { sent, hasClass, doubt: sent && !hasClass, nothingSent: !sent && !hasClass };
}

export const leaseLive = (row: BatchRow): boolean => row.leaseExpiresAt !== null && row.leaseExpiresAt.getTime() > Date.now();

/** A terminal state with no change due, and nobody holding it. */
export const atRest = (row: BatchRow): boolean => TERMINAL_STATES.includes(row.state) && !changeDue(row) && !leaseLive(row);

const cancelledOrWanted = (row: BatchRow) => row.cancelledAt !== null || row.state === 'cancelled';

/** Invariant 8: the table of states and the facts each allows. */
export function stateFactsProblem(row: BatchRow): string | undefined {
  const { sent, hasClass, doubt } = factsOf(row);
  const bad = (what: string) => `${row.state} ${what} (classId ${row.classId}, create_sent_at ${row.createSentAt?.toISOString() ?? null})`;
  switch (row.state) {
    case 'pending':
      return hasClass || sent ? bad('with a ClassID or an add-class sent') : undefined;
    case 'creating':
    case 'needs_review':
      return doubt ? undefined : bad('without doubt (it needs an add-class sent and no ClassID)');
    case 'created':
    case 'link_enabled':
    case 'synced':
      return hasClass ? undefined : bad('without a ClassID');
    case 'failed':
    case 'cancelled':
      return doubt ? bad('while in doubt (an add-class was sent, no ClassID known): a class may exist') : undefined;
    case 'abandoned':
      return hasClass ? bad('with a ClassID') : undefined;
  }
}

const expectState = (after: BatchRow, want: BatchState, why: string) => (after.state === want ? undefined : `expected ${want} (${why}), got ${after.state}`);

/** Intake of `batch.cancelled` (a version above the last). */
export function cancelProblem(before: BatchRow, after: BatchRow): string | undefined {
  const { nothingSent, hasClass, doubt } = factsOf(before);
  if (cancelledOrWanted(before)) return expectState(after, before.state, 'already cancelled: version only');
  if (after.cancelledAt === null && after.state !== 'cancelled') return 'a cancel was accepted but neither cancelledAt nor the state says so';
  if (nothingSent && (before.state === 'pending' || before.state === 'failed')) return expectState(after, 'cancelled', `nothing sent, ${before.state}`);
  if (hasClass && before.state === 'failed') return expectState(after, 'created', 'failed with a class: a run archives it');
  if (doubt) return expectState(after, before.state, 'in doubt: the state is kept, never cancelled');
  return expectState(after, before.state, 'the state is kept');
}

/** Intake of `batch.updated` / `batch.created` again (a version above the last), whose values render `name`. */
export function updateProblem(before: BatchRow, after: BatchRow, name: string): string | undefined {
  const { nothingSent, hasClass } = factsOf(before);
  if (after.cancelledAt !== null) return 'a reopening event left cancelledAt set';
  if (cancelledOrWanted(before) && hasClass && after.archivedAt === null) return 'reopened with a class, but archivedAt is null (the next edit must unarchive)';
  const state = before.state === 'cancelled' ? (hasClass ? 'created' : 'pending') : before.state;
  const wrongState = expectState(after, state, before.state === 'cancelled' ? 'reopened' : 'the state is kept');
  if (wrongState) return wrongState;
  if (nothingSent && (after.className !== name || after.nextClassName !== null)) {
    return `nothing sent: the next add-class must carry ${JSON.stringify(name)} (className ${JSON.stringify(after.className)}, nextClassName ${JSON.stringify(after.nextClassName)})`;
  }
  const waiting = after.nextClassName ?? after.className;
  return waiting === name ? undefined : `the newest name ${JSON.stringify(name)} is neither the class name nor waiting (${JSON.stringify(waiting)})`;
}

/** Where an operator's retry resumes a failed / needs_review batch: by its facts. */
export function retryProblem(before: BatchRow, after: BatchRow): string | undefined {
  if (before.state !== 'failed' && before.state !== 'needs_review') return expectState(after, before.state, 'retry changes only failed / needs_review');
  const { hasClass, doubt } = factsOf(before);
  const want: BatchState = hasClass && before.linkEnabledAt ? 'link_enabled' : hasClass ? 'created' : doubt ? 'creating' : 'pending';
  return expectState(after, want, 'retry resumes by facts');
}

/** Abandon: pending / failed / needs_review, no class, no live lease. */
export function abandonProblem(before: BatchRow, after: BatchRow): string | undefined {
  const allowed = ['pending', 'failed', 'needs_review'].includes(before.state) && before.classId === null && !leaseLive(before);
  return expectState(after, allowed ? 'abandoned' : before.state, allowed ? 'abandonable' : 'not abandonable');
}

/** Undo of an abandon: where the facts lead. */
export function undoProblem(before: BatchRow, after: BatchRow): string | undefined {
  if (before.state !== 'abandoned') return expectState(after, before.state, 'not abandoned');
  const { doubt } = factsOf(before);
  if (before.cancelledAt !== null && !doubt) return expectState(after, 'cancelled', 'cancelled while abandoned, no doubt');
  if (doubt) return expectState(after, 'needs_review', 'abandoned in doubt');
  const from = before.abandonedFrom ?? 'failed';
  return expectState(after, from === 'needs_review' ? 'failed' : from, `abandoned from ${from}`);
}

/** Exhaustion recorded outside a run: only when no live lease is held; in doubt → needs_review. */
export function exhaustProblem(before: BatchRow, after: BatchRow): string | undefined {
  if (leaseLive(before)) return expectState(after, before.state, `a live lease is held (by ${before.leaseOwner}): the holder's run owns the batch`);
  if (TERMINAL_STATES.includes(before.state)) return expectState(after, before.state, 'already at rest');
  return expectState(after, factsOf(before).doubt ? 'needs_review' : 'failed', factsOf(before).doubt ? 'in doubt' : 'attempts exhausted');
}
