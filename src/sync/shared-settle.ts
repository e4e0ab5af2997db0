// One batch's decision on an institute listing that other batches may share (src/sync/institute-listing.ts).
// The decision stays the batch's own: its candidates, its claims (read now), and the settle step's
// evidence rules weighed at the listing's own `readAt` (src/sync/settle.ts). Only the listing's lag
// samples are not the batch's: they are recorded once, by the first caller of the process that read it.
import type { MappingRow } from '../mapping/index.ts';
import * as mapping from '../mapping/index.ts';
import type { SharedListing } from './institute-listing.ts';
import { type Resolution, listingRefused, resolveFromListing } from './resolve.ts';
import type { ReadLag } from './read-lag.ts';
import { isClassroomError, isNotFound } from '../classroom/errors.ts';
import { type Settled, observeListing, settleRow } from './settle.ts';
import type { SyncDeps } from './types.ts';

/** What the listing decides for `row`; `settled` only for `create`, whose "not listed" must be believed first. */
export async function decideOnListing(deps: SyncDeps, row: MappingRow, shared: SharedListing): Promise<{ resolution: Resolution; settled?: Settled }> {
  const { readAt, listed } = shared;
  const claims = (ids: string[]) => mapping.claimsOnCandidates(deps.db, row, ids);
  const input = { instituteId: row.instituteId, className: row.className, rules: deps.settings.nameRules, claims };
  const { resolution } = await resolveFromListing(shared.listing, listed, input);
  const sampling = shared.takeSamples() && deps.lagMonitor !== undefined;
  const observing = sampling ? deps : { ...deps, lagMonitor: undefined };
  const acks = resolution.decision === 'create' || sampling ? await observeListing(observing, row.instituteId, readAt, listed) : [];
  if (resolution.decision !== 'create') return { resolution };
  return { resolution, settled: await settleRow(deps, row, readAt, listed, acks) };
}

/** What a failed listing read means for `row`'s doubt: what the run throws. */
export function listingFailure(lag: ReadLag, row: MappingRow, error: unknown): unknown {
  // The institute did answer the add-class; a listing that does not know it yet is lagging.
  if (isNotFound(error) && row.createSentAt && lag.patienceLeft(row.createSentAt) > 0)
    return lag.notVisibleYet(row.createSentAt, `institute ${row.instituteId}`);
  // Only the listing settles a doubt: refused, it is asked again, and never read as "nothing made".
  if (isClassroomError(error) && error.kind === 'rejected') return listingRefused(error);
  return error;
}
