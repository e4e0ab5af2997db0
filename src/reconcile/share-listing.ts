// A pass's listing of an institute that has a batch in doubt is the fleet's copy too
// (src/sync/institute-listing.ts): a batch that settles its add-class soon after takes it instead of
// reading the listing itself. It is weighed at the time its request left, by the database's clock,
// like every listing a batch settles on; nothing else of the pass is shared.
import type { Remotes } from '../accounts/remotes.ts';
import type { InstituteListing } from '../classroom/schemas.ts';
import type { Redis } from '../redis/connection.ts';
import { accountListingCache } from '../sync/institute-listing.ts';
import type { ListingCache } from '../sync/listing-cache.ts';
import type { Mapping } from './mappings.ts';

/** The fleet's copy of an institute's listing, under the rate-limit key of the account serving it. */
export type ListingCacheFor = (instituteId: string) => ListingCache | undefined;

export function listingCachesOf(redis: Redis, queuePrefix: string, remotes: Pick<Remotes, 'forInstitute'>): ListingCacheFor {
  return (instituteId) => {
    const remote = remotes.forInstitute(instituteId);
    if (!remote) return undefined;
    return accountListingCache(redis, { queuePrefix, classroom: remote.account.classroom });
  };
}

/** A batch whose run settles an add-class of unknown outcome from the listing (src/sync/steps.ts `resolveCreate`). */
export function settlesFromListing(mapping: Mapping): boolean {
  return mapping.classId === null && mapping.sentCreate === true && (mapping.state === 'creating' || mapping.state === 'pending');
}

/** Publishes the listing read at `readAt` when one of the institute's batches is in doubt; never throws. */
export async function shareListing(
  cache: ListingCache | undefined,
  instituteId: string,
  read: { readAt: number | undefined; listing: InstituteListing },
  mappings: readonly Mapping[],
): Promise<void> {
  if (!cache || read.readAt === undefined || !mappings.some(settlesFromListing)) return;
  await cache.publish(instituteId, { readAt: read.readAt, listing: read.listing });
}
