// The reads bench/scale.ts times on the empty database and on the full one, each as its caller makes
// it: `status` (in this process, and the whole CLI), a metrics scrape, pages of GET /v1/batches,
// `history`, the reconciliation's unread-institute read, an outbox claim and a pruning pass.
import { type SQL, sql } from 'drizzle-orm';
import { breakersOf } from '../../src/accounts/remotes.ts';
import { COUNT_UP_TO, batchesOfInstituteStatement } from '../../src/mapping/batches-of-institute.ts';
import * as mapping from '../../src/mapping/index.ts';
import { listBatchesStatement } from '../../src/mapping/list-batches.ts';
import { claimDueStatement } from '../../src/mapping/outbox/claim-due-messages.ts';
import { pruneMessagesStatement } from '../../src/mapping/outbox/prune-messages.ts';
import { pruneEventsStatement } from '../../src/mapping/prune-events.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { bothQueues } from '../../src/sync/queue.ts';
import { runCli } from '../support/enqueue.ts';
import { medianMs } from './timing.ts';

const DAY_MS = 86_400_000;
/** BATCH_EVENTS_RETENTION's default: what a worker's pass prunes past. */
const RETENTION_MS = 30 * DAY_MS;

export interface ReadFigures {
  /** The reads `status` makes (src/cli/status-print.ts printCounts): counts by state and lane stats, together. */
  statusReadsMs: number;
  /** `classroom-sync status --json`, spawn to exit (start-up included). */
  statusCliMs: number;
  /** A scrape: every scrape-time gauge refreshed (PostgreSQL and Redis), then the text format rendered. */
  scrapeMs: number;
  /** The scrape's two sources, each alone. */
  scrapePostgresMs: number;
  scrapeRedisMs: number;
  listFailedPageMs: number;
  listInstitutePageMs: number;
  listInstituteStatePageMs: number;
  historyMs: number;
  batchesOfInstituteMs: number;
  claimMs: number;
  /** pruneEvents then pruneMessages at the default retention (nothing past it here: what every pass costs). */
  prunePassMs: number;
}

/** What the reads are asked about: a batch of the first intake call and its institute. */
export const SUBJECT = { instituteId: 'inst-0', batchId: 'new-1' };

export async function measureReads(runtime: Runtime, env: Record<string, string>): Promise<ReadFigures> {
  const db = runtime.database.db;
  const metrics = createMetrics({ defaultMetrics: false });
  const sources = {
    db,
    queues: bothQueues(runtime.queue),
    redis: runtime.redis,
    breakers: breakersOf(runtime.remotes),
    accounts: runtime.config.accounts,
    // A slow read must be timed, not cut short by the scrape's own deadline.
    timeoutMs: 600_000,
  };
  return {
    statusReadsMs: await medianMs(() => Promise.all([mapping.countByState(db), mapping.laneStats(db)])),
    statusCliMs: await medianMs(() => runCli(env, ['status', '--json']), 3),
    scrapeMs: await medianMs(async () => {
      await metrics.refresh(sources);
      await metrics.registry.metrics();
    }),
    scrapePostgresMs: await medianMs(() => metrics.refresh(sources, ['postgres'])),
    scrapeRedisMs: await medianMs(() => metrics.refresh(sources, ['redis'])),
    listFailedPageMs: await medianMs(() => mapping.listBatches(db, { state: 'failed' }, { limit: 100 })),
    listInstitutePageMs: await medianMs(() => mapping.listBatches(db, { instituteId: SUBJECT.instituteId }, { limit: 100 })),
    listInstituteStatePageMs: await medianMs(() => mapping.listBatches(db, { instituteId: SUBJECT.instituteId, state: 'synced' }, { limit: 100 })),
    historyMs: await medianMs(() => mapping.readTimeline(db, SUBJECT)),
    batchesOfInstituteMs: await medianMs(() => mapping.batchesOfInstitute(db, SUBJECT.instituteId, 50)),
    claimMs: await medianMs(async () => {
      const claimed = await mapping.outbox.claimDueMessages(db, 50, 60_000);
      await mapping.outbox.releaseClaims(db, claimed);
    }),
    prunePassMs: await medianMs(async () => {
      await mapping.pruneEvents(db, RETENTION_MS);
      await mapping.outbox.pruneMessages(db, RETENTION_MS);
    }),
  };
}

/** The statements of the reads above whose plans the report shows (on the full database). */
export function readStatements(rowId: number): Record<string, SQL> {
  return {
    'list page: pending (the first 100)': listBatchesStatement({ state: 'pending' }, { limit: 100 }),
    'list page: failed (none among them)': listBatchesStatement({ state: 'failed' }, { limit: 100 }),
    [`list page: institute ${SUBJECT.instituteId}`]: listBatchesStatement({ instituteId: SUBJECT.instituteId }, { limit: 100 }),
    [`list page: institute ${SUBJECT.instituteId}, synced`]: listBatchesStatement({ instituteId: SUBJECT.instituteId, state: 'synced' }, { limit: 100 }),
    'history (a batch of the first intake call)': historyStatement(rowId),
    [`batchesOfInstitute(${SUBJECT.instituteId}, 50)`]: batchesOfInstituteStatement(SUBJECT.instituteId, 50, COUNT_UP_TO),
    'outbox claim (50)': claimDueStatement(50, 60_000),
    'prune pass: audit rows past 30 days (none)': pruneEventsStatement(RETENTION_MS, 5_000),
    'prune pass: settled messages past 30 days (none)': pruneMessagesStatement(RETENTION_MS, 5_000),
    'prune slice: 5,000 audit rows past 12 hours': pruneEventsStatement(DAY_MS / 2, 5_000),
    'prune slice: 5,000 settled messages past 12 hours': pruneMessagesStatement(DAY_MS / 2, 5_000),
  };
}

/** readTimeline's second statement, as drizzle builds it but for the column list (the first is findBatch, by the unique key). */
function historyStatement(rowId: number): SQL {
  return sql`select * from batch_events where batch_row_id = ${rowId} order by id limit 1000`;
}
