// What stands between /metrics and the databases. Scrapers may come as often and as many at once as
// they like (the endpoint is open); the work behind the answer does not follow them:
//   - the answer (gauges refreshed, then the registry's text) is made at most once per
//     SCRAPE_SPACING_MS and shared by every scrape waiting for it, so a storm of scrapers waits
//     instead of taking the event loop from the sync jobs, and no answer predates its request;
//   - PostgreSQL (whole-table counts) is read at most once every SCRAPE_REUSE_MS, on a connection of
//     its own, never the sync jobs' pool. Its statement_timeout makes PostgreSQL itself cancel a
//     count the scrape has stopped waiting for;
//   - Redis (queue counts, credentials breakers: cheap, and what the refused-key alert reads) is
//     read for each answer.
import { type Database, createDatabase } from '../db/client.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';
import type { ScrapeSource } from './scrape-gauges.ts';
import type { ScrapeSources } from './scrape.ts';
import { paced, singleFlight } from './single-flight.ts';

/** How long one PostgreSQL read serves every scrape (from its start). */
export const SCRAPE_REUSE_MS = 5_000;
/** The least time between two answers made: scrapes that come sooner wait and share the next. */
export const SCRAPE_SPACING_MS = 500;
/** The scrape connection's application_name, as pg_stat_activity shows it. */
export const SCRAPE_APPLICATION_NAME = 'classroom-sync metrics';

export interface ScrapeGuardDeps {
  /** `metrics.refresh`. */
  refresh: (sources: ScrapeSources, only: readonly ScrapeSource[]) => Promise<void>;
  /** `metrics.registry.metrics()`: the text answer. */
  render: () => Promise<string>;
  /** The scrape opens its own connection to it on the first scrape. */
  databaseUrl: string;
  /** Everything but `db`; called for each answer, since queues can be added after start. */
  sources: () => Omit<ScrapeSources, 'db' | 'timeoutMs'>;
  /** Per source, and the connection's statement_timeout. */
  timeoutMs: number;
  /** Times SCRAPE_REUSE_MS and SCRAPE_SPACING_MS (default: the monotonic clock). */
  clock?: Clock;
}

export interface ScrapeGuard {
  /**
   * The text answer to a scrape, made after it came, encoded once for every scrape that shares it.
   * Never throws on a failed source.
   */
  answer(): Promise<Buffer>;
  /** Closes the scrape's connection (waiting at most for its statement in flight); later answers read no database. */
  close(): Promise<void>;
}

export function createScrapeGuard(deps: ScrapeGuardDeps): ScrapeGuard {
  let database: Database | undefined;
  let closed = false;
  const read = (source: ScrapeSource) => async () => {
    if (closed) return;
    database ??= openScrapeDatabase(deps.databaseUrl, deps.timeoutMs);
    await deps.refresh({ ...deps.sources(), db: database.db, timeoutMs: deps.timeoutMs }, [source]);
  };
  const clock = deps.clock ?? monotonicClock;
  const postgres = singleFlight(read('postgres'), SCRAPE_REUSE_MS, clock);
  const redis = read('redis');
  const answer = paced(
    async () => {
      await Promise.all([postgres(), redis()]);
      return Buffer.from(await deps.render());
    },
    SCRAPE_SPACING_MS,
    clock,
  );
  return {
    answer,
    async close() {
      closed = true;
      await database?.close();
    },
  };
}

/**
 * A pool of one, for the scrape's counts only. createDatabase takes no statement_timeout, and pg
 * reads one from the connection string (where it would win over a pool option anyway).
 */
function openScrapeDatabase(url: string, statementTimeoutMs: number): Database {
  const withTimeout = `${url}${url.includes('?') ? '&' : '?'}statement_timeout=${Math.max(1, Math.ceil(statementTimeoutMs))}`;
  return createDatabase(withTimeout, { max: 1, applicationName: SCRAPE_APPLICATION_NAME });
}
