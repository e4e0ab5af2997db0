// The gauges read at scrape time, and the counters of those reads. Defined here, filled by
// scrape.ts; every one is a fleet-wide value (aggregate with max(), not sum()).
import { Counter, Gauge, type Registry } from 'prom-client';

/** The dependencies a scrape reads; each is refreshed (and may fail) on its own. */
export type ScrapeSource = 'postgres' | 'redis';
export const SCRAPE_SOURCES: readonly ScrapeSource[] = ['postgres', 'redis'];

export interface ScrapeGauges {
  batches: Gauge<'state'>;
  laneBatches: Gauge<'lane'>;
  laneOldest: Gauge<'lane'>;
  accountBatches: Gauge<'account' | 'state'>;
  webhookPending: Gauge;
  webhookOldest: Gauge;
  queueJobs: Gauge<'queue' | 'state'>;
  oldestWaiting: Gauge<'queue'>;
  credentialsRefused: Gauge<'account'>;
  credentialsRefusedSince: Gauge<'account'>;
  errors: Counter<'source'>;
  refreshes: Counter<'source'>;
}

export function scrapeGauges(registers: Registry[]): ScrapeGauges {
  const errors = new Counter({
    name: 'classroom_sync_scrape_errors_total',
    help: "Scrapes whose read of a source (postgres, redis) failed or timed out; that source's gauges are absent from such a scrape.",
    labelNames: ['source'] as const,
    registers,
  });
  const refreshes = new Counter({
    name: 'classroom_sync_scrape_refreshes_total',
    help: 'Reads of a source (postgres, redis) actually made for the scrape-time gauges. Scrapes share them: /metrics makes an answer at most twice a second and reads PostgreSQL at most once every 5 s.',
    labelNames: ['source'] as const,
    registers,
  });
  for (const source of SCRAPE_SOURCES) {
    errors.labels({ source }).inc(0);
    refreshes.labels({ source }).inc(0);
  }
  return { ...postgresGauges(registers), ...redisGauges(registers), errors, refreshes };
}

/** Read from PostgreSQL at scrape time. */
function postgresGauges(
  registers: Registry[],
): Pick<ScrapeGauges, 'batches' | 'laneBatches' | 'laneOldest' | 'accountBatches' | 'webhookPending' | 'webhookOldest'> {
  return {
    webhookPending: new Gauge({
      name: 'classroom_sync_webhook_pending',
      help: 'Webhook messages not yet delivered nor given up (the outbox), read from PostgreSQL at scrape time.',
      registers,
    }),
    webhookOldest: new Gauge({
      name: 'classroom_sync_webhook_oldest_pending_seconds',
      help: 'How long ago the event of the oldest pending webhook message happened; 0 when none is pending. Read from PostgreSQL at scrape time.',
      registers,
    }),
    batches: new Gauge({
      name: 'classroom_sync_batches',
      help: 'Batches (mappings) by state, read from PostgreSQL at scrape time.',
      labelNames: ['state'] as const,
      registers,
    }),
    laneBatches: new Gauge({
      name: 'classroom_sync_lane_batches',
      help: 'Unfinished batches per queue lane (under_way: add-class sent or done; live, operator, backfill: not started), read from PostgreSQL at scrape time.',
      labelNames: ['lane'] as const,
      registers,
    }),
    laneOldest: new Gauge({
      name: 'classroom_sync_lane_oldest_seconds',
      help: 'Per queue lane, how long the unfinished batch that has waited longest has been in its lane; 0 when the lane is empty. Read from PostgreSQL at scrape time.',
      labelNames: ['lane'] as const,
      registers,
    }),
    accountBatches: new Gauge({
      name: 'classroom_sync_account_batches',
      help: 'With several accounts: batches by account (the one serving their institute; "(no account)" for none) and state, read from PostgreSQL at scrape time.',
      labelNames: ['account', 'state'] as const,
      registers,
    }),
  };
}

/** Read from Redis at scrape time. */
function redisGauges(registers: Registry[]): Pick<ScrapeGauges, 'queueJobs' | 'oldestWaiting' | 'credentialsRefused' | 'credentialsRefusedSince'> {
  return {
    queueJobs: new Gauge({
      name: 'classroom_sync_queue_jobs',
      help: 'BullMQ jobs by queue and state, read from Redis at scrape time.',
      labelNames: ['queue', 'state'] as const,
      registers,
    }),
    oldestWaiting: new Gauge({
      name: 'classroom_sync_queue_oldest_waiting_seconds',
      help: 'Per queue, how long the job next in line (wait or paused) has been ready to run; 0 when none waits. Read from Redis at scrape time.',
      labelNames: ['queue'] as const,
      registers,
    }),
    credentialsRefused: new Gauge({
      name: 'classroom_sync_credentials_refused',
      help: 'Per account, 1 while the classroom service refuses its API key itself (its credentials breaker is open: its batches wait and one process probes), else 0. Read from Redis at scrape time.',
      labelNames: ['account'] as const,
      registers,
    }),
    credentialsRefusedSince: new Gauge({
      name: 'classroom_sync_credentials_refused_since_timestamp_seconds',
      help: 'Per account, Unix time when its open credentials breaker opened; absent while it is closed.',
      labelNames: ['account'] as const,
      registers,
    }),
  };
}
