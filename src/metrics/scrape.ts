// Gauges read at scrape time. Postgres and BullMQ are shared by the whole fleet, so every worker's
// /metrics reports the same fleet-wide values; aggregate them with max(), not sum().
import type { Job, Queue } from 'bullmq';
import type { Gauge } from 'prom-client';
import type { Account } from '../accounts/types.ts';
import { countByAccount, countByState, laneStats, outbox } from '../read-model/index.ts';
import type { Db } from '../db/client.ts';
import type { CredentialsBreaker } from '../ratelimit/breaker.ts';
import type { Redis } from '../redis/connection.ts';
import { type Clock, systemClock } from '../support/clock.ts';
import { TimeoutError, withTimeout } from '../support/timeout.ts';
import { SCRAPE_SOURCES, type ScrapeGauges, type ScrapeSource } from './scrape-gauges.ts';

export interface ScrapeSources {
  db: Db;
  queues: readonly Queue[];
  /** The queues' connection: while it is down, commands would only pile up in its offline queue. */
  redis?: Redis;
  /** With several accounts: batches by account and state are read too. */
  accounts?: readonly Account[];
  /** Each account's credentials breaker (read from Redis with the queue counts). */
  breakers?: readonly { account: string; breaker: CredentialsBreaker }[];
  /**
   * Per source; a slow dependency must not hold a scrape past Prometheus' own timeout. `db` should
   * also cancel a statement after this long (a statement_timeout): waiting stops here, the work not.
   */
  timeoutMs?: number;
  /** What a waiting job's age and the read's deadline are counted by: epoch ms, as BullMQ's times are (default: the system clock). */
  clock?: Pick<Clock, 'now'>;
}

/** Reads `only` these sources (default both) into their gauges. Never throws: a failed source is counted. */
export async function refreshScrapeGauges(gauges: ScrapeGauges, sources: ScrapeSources, only: readonly ScrapeSource[] = SCRAPE_SOURCES): Promise<void> {
  const timeoutMs = sources.timeoutMs ?? 2_000;
  const clock = sources.clock ?? systemClock;
  const { batches, laneBatches, laneOldest, accountBatches, webhookPending, webhookOldest } = gauges;
  const { queueJobs, oldestWaiting, credentialsRefused, credentialsRefusedSince } = gauges;
  const refresh = {
    postgres: () =>
      refreshSource(gauges, 'postgres', timeoutMs, [batches, laneBatches, laneOldest, accountBatches, webhookPending, webhookOldest], {
        load: () => readPostgres(sources, clock, clock.now() + timeoutMs),
        apply: (value) => applyPostgres(gauges, value),
      }),
    redis: () =>
      refreshSource(gauges, 'redis', timeoutMs, [queueJobs, oldestWaiting, credentialsRefused, credentialsRefusedSince], {
        load: () => readRedis(sources),
        apply: (value) => applyRedis(gauges, value, clock.now()),
      }),
  };
  await Promise.all(only.map((source) => refresh[source]()));
}

/** One source: counted as a refresh, read within `timeoutMs`, and its gauges replaced, or absent and an error counted. */
async function refreshSource<T>(
  gauges: ScrapeGauges,
  source: ScrapeSource,
  timeoutMs: number,
  owned: readonly Gauge<string>[],
  read: { load: () => Promise<T>; apply: (value: T) => void },
): Promise<void> {
  gauges.refreshes.labels({ source }).inc();
  try {
    const value = await withTimeout(read.load(), timeoutMs, source);
    for (const gauge of owned) gauge.reset();
    read.apply(value);
  } catch {
    // Stale numbers would look healthy; absent series plus a counted error do not.
    for (const gauge of owned) gauge.reset();
    gauges.errors.labels({ source }).inc();
  }
}

type PostgresRead = Awaited<ReturnType<typeof readPostgres>>;
type RedisRead = Awaited<ReturnType<typeof readRedis>>;

/**
 * One statement after another (the scrape's connection is a pool of one), and none started after
 * the scrape stopped waiting: a blocked count leaves at most itself behind, ended by its
 * statement_timeout, never a queue of counts for the next scrape to wait behind.
 */
async function readPostgres(sources: ScrapeSources, clock: Pick<Clock, 'now'>, deadline: number) {
  const next = <T>(read: () => Promise<T>): Promise<T> => {
    if (clock.now() >= deadline) throw new TimeoutError('postgres: the scrape stopped waiting');
    return read();
  };
  const counts = await next(() => countByState(sources.db));
  const lanes = await next(() => laneStats(sources.db));
  const accounts = await next(() => perAccount(sources));
  const webhooks = await next(() => outbox.outboxStats(sources.db));
  return { counts, lanes, accounts, webhooks };
}

function applyPostgres(gauges: ScrapeGauges, { counts, lanes, accounts, webhooks }: PostgresRead): void {
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
}

function readRedis(sources: ScrapeSources) {
  return Promise.all([queueStats(sources), breakerStates(sources)]);
}

function applyRedis(gauges: ScrapeGauges, [perQueue, breakers]: RedisRead, now: number): void {
  for (const [queue, counts, readyAt] of perQueue) {
    for (const [state, n] of Object.entries(counts)) gauges.queueJobs.labels({ queue, state }).set(n);
    gauges.oldestWaiting.labels({ queue }).set(readyAt === undefined ? 0 : Math.max(0, now - readyAt) / 1000);
  }
  for (const { account, refused } of breakers) {
    gauges.credentialsRefused.labels({ account }).set(refused ? 1 : 0);
    if (refused) gauges.credentialsRefusedSince.labels({ account }).set(refused.since.getTime() / 1000);
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
