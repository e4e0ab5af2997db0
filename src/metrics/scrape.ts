// Gauges read at scrape time. Postgres and BullMQ are shared by the whole fleet, so every worker's
// /metrics reports the same fleet-wide values; aggregate them with max(), not sum().
import type { Job, Queue } from 'bullmq';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Account } from '../accounts/types.ts';
import { countByAccount, countByState, laneStats, outbox } from '../read-model/index.ts';
import type { Db } from '../db/client.ts';
import type { CredentialsBreaker } from '../ratelimit/breaker.ts';
import type { Redis } from '../redis.ts';
import { withTimeout } from '../timeout.ts';

export interface ScrapeSources {
  db: Db;
  queues: readonly Queue[];
  /** The queues' connection: while it is down, commands would only pile up in its offline queue. */
  redis?: Redis;
  /** With several accounts: batches by account and state are read too. */
  accounts?: readonly Account[];
  /** Each account's credentials breaker (read from Redis with the queue counts). */
  breakers?: readonly { account: string; breaker: CredentialsBreaker }[];
  /** Per source; a slow dependency must not hold a scrape past Prometheus' own timeout. */
  timeoutMs?: number;
}

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
}

export function scrapeGauges(registers: Registry[]): ScrapeGauges {
  const errors = new Counter({
    name: 'classroom_sync_scrape_errors_total',
    help: "Scrapes whose read of a source (postgres, redis) failed or timed out; that source's gauges are absent from such a scrape.",
    labelNames: ['source'] as const,
    registers,
  });
  errors.labels({ source: 'postgres' }).inc(0);
  errors.labels({ source: 'redis' }).inc(0);
  return { ...postgresGauges(registers), ...redisGauges(registers), errors };
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

export async function refreshScrapeGauges(gauges: ScrapeGauges, sources: ScrapeSources): Promise<void> {
  const timeoutMs = sources.timeoutMs ?? 2_000;
  await Promise.all([
    read(
      'postgres',
      () => Promise.all([countByState(sources.db), laneStats(sources.db), perAccount(sources), outbox.outboxStats(sources.db)]),
      ([counts, lanes, accounts, webhooks]) => {
        gauges.webhookPending.set(webhooks.pending);
        gauges.webhookOldest.set(webhooks.oldestPendingSeconds);
        for (const { account, batches } of accounts) {
          for (const [state, n] of Object.entries(batches)) gauges.accountBatches.labels({ account, state }).set(n);
        }
        for (const [state, n] of Object.entries(counts)) gauges.batches.labels({ state }).set(n);
        for (const [lane, stat] of Object.entries(lanes)) {
          gauges.laneBatches.labels({ lane }).set(stat.batches);
          gauges.laneOldest.labels({ lane }).set(stat.oldestSeconds);
        }
      },
      gauges.batches,
      gauges.laneBatches,
      gauges.laneOldest,
      gauges.accountBatches,
      gauges.webhookPending,
      gauges.webhookOldest,
    ),
    read(
      'redis',
      () => Promise.all([queueStats(sources), breakerStates(sources)]),
      ([perQueue, breakers]) => {
        const now = Date.now();
        for (const [queue, counts, readyAt] of perQueue) {
          for (const [state, n] of Object.entries(counts)) gauges.queueJobs.labels({ queue, state }).set(n);
          gauges.oldestWaiting.labels({ queue }).set(readyAt === undefined ? 0 : Math.max(0, now - readyAt) / 1000);
        }
        for (const { account, refused } of breakers) {
          gauges.credentialsRefused.labels({ account }).set(refused ? 1 : 0);
          if (refused) gauges.credentialsRefusedSince.labels({ account }).set(refused.since.getTime() / 1000);
        }
      },
      gauges.queueJobs,
      gauges.oldestWaiting,
      gauges.credentialsRefused,
      gauges.credentialsRefusedSince,
    ),
  ]);

  async function read<T>(source: 'postgres' | 'redis', load: () => Promise<T>, apply: (value: T) => void, ...owned: Gauge<string>[]) {
    try {
      const value = await withTimeout(load(), timeoutMs, source);
      for (const gauge of owned) gauge.reset();
      apply(value);
    } catch {
      // Stale numbers would look healthy; absent series plus a counted error do not.
      for (const gauge of owned) gauge.reset();
      gauges.errors.labels({ source }).inc();
    }
  }
}

/** Only with several accounts: one account's numbers would repeat classroom_sync_batches. */
async function perAccount(sources: ScrapeSources) {
  return sources.accounts && sources.accounts.length > 1 ? countByAccount(sources.db, sources.accounts) : [];
}

function breakerStates(sources: ScrapeSources) {
  return Promise.all((sources.breakers ?? []).map(async ({ account, breaker }) => ({ account, refused: await breaker.state() })));
}

async function queueStats(sources: ScrapeSources) {
  if (sources.redis && sources.redis.status !== 'ready') throw new Error(`redis connection is ${sources.redis.status}`);
  return Promise.all(sources.queues.map(async (q) => [q.name, await q.getJobCounts(), await oldestReadyAt(q)] as const));
}

/**
 * When the job next in line became ready to run (ms), or undefined when none waits. BullMQ keeps no
 * "entered wait" time, so this is the latest of: added (plus its initial delay, e.g. a scheduled
 * tick) and its last attempt's start (a retried or deferred job). Never later than the real moment,
 * so the age errs high, by at most one attempt plus its backoff.
 */
async function oldestReadyAt(queue: Queue): Promise<number | undefined> {
  // Ascending: the end of each list the worker takes from next.
  const heads: Job[] = await queue.getJobs(['wait', 'paused', 'prioritized'], 0, 0, true);
  const ready = heads.map((job) => Math.max(job.timestamp + (job.opts.delay ?? 0), job.processedOn ?? 0));
  return ready.length ? Math.min(...ready) : undefined;
}
