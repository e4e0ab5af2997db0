// Gauges read at scrape time. Postgres and BullMQ are shared by the whole fleet, so every worker's
// /metrics reports the same fleet-wide values; aggregate them with max(), not sum().
import type { Queue } from 'bullmq';
import { Counter, Gauge, type Registry } from 'prom-client';
import { countByState } from '../commands/status.ts';
import type { Db } from '../db/client.ts';

export interface ScrapeSources {
  db: Db;
  queues: readonly Queue[];
  /** Per source; a slow dependency must not hold a scrape past Prometheus' own timeout. */
  timeoutMs?: number;
}

export interface ScrapeGauges {
  batches: Gauge<'state'>;
  queueJobs: Gauge<'queue' | 'state'>;
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
    errors,
  };
}

export async function refreshScrapeGauges(gauges: ScrapeGauges, sources: ScrapeSources): Promise<void> {
  const timeoutMs = sources.timeoutMs ?? 2_000;
  await Promise.all([
    read('postgres', () => countByState(sources.db), (counts) => {
      for (const [state, n] of Object.entries(counts)) gauges.batches.labels({ state }).set(n);
    }, gauges.batches),
    read('redis', () => Promise.all(sources.queues.map(async (q) => [q.name, await q.getJobCounts()] as const)), (perQueue) => {
      for (const [queue, counts] of perQueue) {
        for (const [state, n] of Object.entries(counts)) gauges.queueJobs.labels({ queue, state }).set(n);
      }
    }, gauges.queueJobs),
  ]);

  async function read<T>(source: 'postgres' | 'redis', load: () => Promise<T>, apply: (value: T) => void, gauge: Gauge<string>) {
    try {
      const value = await withTimeout(load(), timeoutMs, source);
      gauge.reset();
      apply(value);
    } catch {
      // Stale numbers would look healthy; absent series plus a counted error do not.
      gauge.reset();
      gauges.errors.labels({ source }).inc();
    }
  }
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
