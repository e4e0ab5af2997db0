// What a sync run needs and reports: its dependencies (handed in by the worker, or by a test), its
// settings, and the transitions it announces.
import type { ClassroomClient } from '../classroom/client.ts';
import type { Logger } from '../logging/logger.ts';
import type { BatchKey, BatchState, Db, MappingRow } from '../mapping/index.ts';
import type { RateLimiter } from '../ratelimit/limiter.ts';
import type { Clock } from '../support/clock.ts';
import type { CredentialsGuard } from './credentials.ts';
import type { InstituteListings } from './institute-listing.ts';
import type { LagMonitor } from './lag-monitor.ts';
import type { NameRules } from './matching.ts';

export interface SyncSettings {
  /** How long a lease lasts after its last renewal (a heartbeat renews it every third of that). */
  leaseMs: number;
  settleMs: number;
  /**
   * CLASSROOM_TIMEOUT (the longest of every account's): how long a request may wait for its answer,
   * and how long after our client gave up on it the remote is taken to still act on it.
   */
  requestTimeoutMs: number;
  /** How long after a write the remote may still answer 404 for it or leave it out of the listing. */
  readLagMs: number;
  /** Pause for the whole fleet after a 429 that carried no Retry-After. */
  throttlePauseMs: number;
  nameRules: NameRules;
  /** CLASSROOM_ARCHIVE_ON_CANCEL: a cancelled batch's class is archived (default), or left as it is. */
  archiveOnCancel?: boolean;
}

export interface Transition {
  key: BatchKey;
  from: BatchState;
  to: BatchState;
  row: MappingRow;
}

export interface SyncDeps {
  db: Db;
  classroom: ClassroomClient;
  limiter?: RateLimiter | undefined;
  /** The batch's logger: its caller binds batchId and instituteId (the job's, in processor.ts). */
  logger: Logger;
  workerId: string;
  settings: SyncSettings;
  onTransition?: ((transition: Transition) => void) | undefined;
  /** Told when the key is refused; tells a 403 about the key from one about a batch. */
  credentials?: CredentialsGuard | undefined;
  /** The account's measured read lag: evidence for settling an unknown add-class (none: patience or a witness only). */
  lagMonitor?: LagMonitor | undefined;
  /** The account's listings shared by batches in doubt (none: each run reads its own). */
  listings?: InstituteListings | undefined;
  /**
   * What a run is timed by: its lease's deadline and heartbeat, the database's clock advanced from
   * the lease grant (read lag, settling), and its waits in place. Default: the monotonic clock.
   */
  clock?: Clock | undefined;
}

/** One account as a sync run uses it: the batch's institute decides which (src/accounts). */
export interface SyncAccount {
  name: string;
  classroom: ClassroomClient;
  limiter: RateLimiter;
  credentials: CredentialsGuard;
  lagMonitor: LagMonitor;
  listings?: InstituteListings | undefined;
}

/** What the queue's processor needs: a run's dependencies, less the account, which each batch picks. */
export interface ProcessorDeps extends Omit<SyncDeps, 'classroom' | 'limiter' | 'credentials'> {
  /** The account serving `instituteId`; undefined when none does (the batch then waits for one). */
  accountFor(instituteId: string): SyncAccount | undefined;
  /**
   * Several accounts share these worker slots: a job reserves its first call's slot before its run
   * and never holds a worker slot waiting for one its account cannot give it yet.
   */
  sharedSlots?: boolean;
  /**
   * How often a batch whose attempts ran out on an outage (remote or PostgreSQL unreachable, answers
   * of unknown outcome) is tried again: it is never written off for that (SYNC_BACKOFF_MAX).
   */
  outageRetryMs?: number;
}

export interface SyncOutcome {
  state: BatchState;
  classId: string | null;
  /** False when the batch was already terminal and nothing was sent. */
  worked: boolean;
}
