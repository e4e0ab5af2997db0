// Gauges read at scrape time. Postgres and BullMQ are shared by the whole fleet, so every worker's
// /metrics reports the same fleet-wide values; aggregate them with max(), not sum().
import type { Job, Queue } from 'bullmq';
import { Counter, Gauge, type Registry } from 'prom-client';
import { countByState } from '../commands/status.ts';
import type { Db } from '../db/client.ts';
import type { Redis } from '../redis.ts';

export interface ScrapeSources {
  db: Db;
  queues: readonly Queue[];
  /** The queues' connection: while it is down, commands would only pile up in its offline queue. */
  redis?: Redis;
  /** Per source; a slow dependency must not hold a scrape past Prometheus' own timeout. */
  timeoutMs?: number;
}

export interface ScrapeGauges {
  batches: Gauge<'state'>;
  queueJobs: Gauge<'queue' | 'state'>;
  oldestWaiting: Gauge<'queue'>;
  errors: Counter<'source'>;
}

export function scrapeGauges(registers: Registry[]): ScrapeGauges {
  const errors = new Counter({
    name: 'classroom_sync_scrape_errors_total',
    help: 'Scrapes whose read of a source (postgres, redis) failed or timed out; that source\'s gauges are absent from such a scrape.',
    labelNames: ['source'] as const,
    registers,
  });
  errors.labels({ source: 'postgres' }).inc(0);
  errors.labels({ source: 'redis' }).inc(0);
  return {
    batches: new Gauge({
      name: 'classroom_sync_batches',
      help: 'Batches (mappings) by state, read from PostgreSQL at scrape time.',
      labelNames: ['state'] as const,
      registers,
    }),
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
    errors,
  };
}

export async function refreshScrapeGauges(gauges: ScrapeGauges, sources: ScrapeSources): Promise<void> {
  const timeoutMs = sources.timeoutMs ?? 2_000;
  await Promise.all([
    read('postgres', () => countByState(sources.db), (counts) => {
      for (const [state, n] of Object.entries(counts)) gauges.batches.labels({ state }).set(n);
    }, gauges.batches),
    read('redis', () => queueStats(sources), (perQueue) => {
      const now = Date.now();
      for (const [queue, counts, readyAt] of perQueue) {
        for (const [state, n] of Object.entries(counts)) gauges.queueJobs.labels({ queue, state }).set(n);
        gauges.oldestWaiting.labels({ queue }).set(readyAt === undefined ? 0 : Math.max(0, now - readyAt) / 1000);
      }
    }, gauges.queueJobs, gauges.oldestWaiting),
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
  const heads: Job[] = await queue.getJobs(['wait', 'paused'], 0, 0, true);
  const ready = heads.map((job) => Math.max(job.timestamp + (job.opts.delay ?? 0), job.processedOn ?? 0));
  return ready.length ? Math.min(...ready) : undefined;
}

export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** Rejects with TimeoutError after `ms`; `work` keeps running but is no longer waited for. */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
