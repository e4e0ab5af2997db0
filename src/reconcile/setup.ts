// What a pass needs from the process's dependencies and its configuration: the one place they are
// put together (the scheduled job, the `reconcile` command, tests and the benchmark all start here).
import type { Remotes } from '../accounts/remotes.ts';
import type { Database } from '../db/client.ts';
import type { Logger } from '../logging/logger.ts';
import type { SyncQueue } from '../sync/queue.ts';
import type { Redis } from '../redis/connection.ts';
import { clientsOf } from './accounts.ts';
import { listingCachesOf } from './share-listing.ts';
import type { ReconcileDeps } from './run.ts';
import type { ReconcileSettings } from './settings.ts';

/** What a pass's dependencies are made from (a Runtime has all of it). */
export interface ReconcileSources {
  database: Pick<Database, 'db'>;
  /** The account serving each institute: its classroom client and credentials breaker. */
  remotes: Pick<Remotes, 'forInstitute'>;
  /** The sync queue: repairs re-enqueue batches on it. */
  queue: SyncQueue;
  logger: Logger;
  /** The Redis of the accounts' rate limits, and its prefix: a pass shares listings with batches in doubt through it (none: not shared). */
  redis?: Redis | undefined;
  reconcileSettings?: Pick<ReconcileSettings, 'queuePrefix'> | undefined;
}

/** Fresh for each pass: the accounts' breakers are read once per pass. */
export function reconcileDepsOf(sources: ReconcileSources, logger = sources.logger): ReconcileDeps {
  const { redis, reconcileSettings: settings } = sources;
  const listingCache = redis && settings ? listingCachesOf(redis, settings.queuePrefix, sources.remotes) : undefined;
  return { db: sources.database.db, clientFor: clientsOf(sources.remotes), queue: sources.queue, logger, listingCache };
}
