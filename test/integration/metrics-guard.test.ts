// The /metrics guard: however many scrapes arrive at once, PostgreSQL is counted once per
// SCRAPE_REUSE_MS, on a connection of the scrape's own with a statement_timeout, never on the sync
// jobs' pool. Real HTTP over loopback against a worker process; conditions are waited for, and the
// only bound on time is the contract itself ("at most one read per SCRAPE_REUSE_MS").
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { SCRAPE_APPLICATION_NAME, SCRAPE_REUSE_MS } from '../../src/metrics/scrape-guard.ts';
import { type Clock, paced, singleFlight } from '../../src/metrics/single-flight.ts';
import type { Metrics } from '../../src/metrics/metrics.ts';
import { untilAllSynced } from '../helpers/batches.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { type Answer, BEARER, call, startTestWorker, useTestWorker } from './http-helpers.ts';

const harness = useHarness();
const { h } = harness;
const w = useTestWorker(harness);

const SCRAPERS = 100;

/** The value of one sample (`name{labels} value`) of a Prometheus text exposition. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Refreshes actually run, read from the registry itself (a scrape would be one more). */
async function refreshes(metrics: Metrics, source: 'postgres' | 'redis'): Promise<number> {
  const counter = metrics.registry.getSingleMetric('classroom_sync_scrape_refreshes_total');
  const values = (await counter!.get()).values;
  return values.find((v) => v.labels.source === source)?.value ?? 0;
}

/** SCRAPERS scrapes at once. */
function storm(url: string, headers: Record<string, string> = {}): Promise<Answer[]> {
  return Promise.all(Array.from({ length: SCRAPERS }, () => call(`${url}/metrics`, { headers })));
}

/** SCRAPERS scrapers, each scraping again as soon as it has its answer, until stopped. */
function scrapers(url: string): { stop(): Promise<Answer[]> } {
  let running = true;
  const loops = Array.from({ length: SCRAPERS }, async () => {
    const answers: Answer[] = [];
    while (running) answers.push(await call(`${url}/metrics`));
    return answers;
  });
  return {
    async stop() {
      running = false;
      return (await Promise.all(loops)).flat();
    },
  };
}

/** The contract: at most one PostgreSQL read per SCRAPE_REUSE_MS, counted from the first. */
const allowedReads = (elapsedMs: number) => 1 + Math.floor(elapsedMs / SCRAPE_REUSE_MS);

/** The connections to the harness's database, as PostgreSQL sees them. */
async function activity(): Promise<{ application_name: string; state: string; wait_event_type: string | null; query: string }[]> {
  const { rows } = await h.runtime.database.pool.query(
    'select application_name, state, wait_event_type, query from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
    [h.databaseName],
  );
  return rows;
}

describe('singleFlight', () => {
  it('runs once for callers that arrive together, and serves that run for reuseMs after it started', async () => {
    let clock = 1_000;
    let runs = 0;
    let finish = () => {};
    const guarded = singleFlight(
      () => {
        runs += 1;
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
      5_000,
      () => clock,
    );
    const waiting = Array.from({ length: 10 }, () => guarded());
    expect(runs).toBe(1);
    finish();
    await Promise.all(waiting);
    clock += 4_999;
    await guarded();
    expect(runs).toBe(1);
    clock += 1;
    const next = guarded();
    expect(runs).toBe(2);
    finish();
    await next;
  });
});

describe('paced', () => {
  /** A clock whose sleeps pass at once, recording how long each would have been. */
  function fakeClock(): Clock & { t: number; sleeps: number[] } {
    const clock = {
      t: 0,
      sleeps: [] as number[],
      now: () => clock.t,
      sleep: async (ms: number) => {
        clock.sleeps.push(ms);
        clock.t += Math.max(0, ms);
      },
    };
    return clock;
  }

  it('runs at once when the last run is older than intervalMs; sooner, callers wait for the next run and share it', async () => {
    const clock = fakeClock();
    let runs = 0;
    const answer = paced(async () => ++runs, 500, clock);
    expect(await answer()).toBe(1);
    clock.t += 100;
    expect(await Promise.all([answer(), answer(), answer()])).toEqual([2, 2, 2]);
    expect(clock.sleeps).toEqual([400]);
    clock.t += 500;
    expect(await answer()).toBe(3);
    expect(clock.sleeps).toEqual([400]);
  });

  it('gives a caller that comes while a run is in flight the next run, never the one that began before it', async () => {
    const clock = fakeClock();
    let runs = 0;
    const finishers: (() => void)[] = [];
    const answer = paced(
      () =>
        new Promise<number>((resolve) => {
          const run = ++runs;
          finishers.push(() => resolve(run));
        }),
      500,
      clock,
    );
    const first = answer();
    const second = answer();
    finishers[0]!();
    expect(await first).toBe(1);
    await waitFor(() => finishers.length === 2, 'the second run to start');
    finishers[1]!();
    expect(await second).toBe(2);
  });
});

describe('/metrics under many scrapers', () => {
  it(`answers ${SCRAPERS} scrapes at once from one PostgreSQL read, made on the scrape's own connection`, async () => {
    const events = Array.from({ length: 5 }, (_, i) => ({ batchId: `g-${i}`, name: `Guard ${i}`, subject: 'Maths' }));
    expect((await call(`${w.url}/v1/batches`, { method: 'POST', headers: BEARER, json: events })).status).toBe(202);
    await untilAllSynced(
      h,
      events.map((e) => e.batchId),
    );

    const before = await refreshes(w.metrics, 'postgres');
    const started = Date.now();
    const answers = await storm(w.url);
    const elapsed = Date.now() - started;
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(sample(answer.text, 'classroom_sync_batches', '{state="synced"}')).toBe(5);
    }
    const reads = (await refreshes(w.metrics, 'postgres')) - before;
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(allowedReads(elapsed));

    // The counts ran on one connection of the scrape's own: a pool of one, with a statement_timeout.
    const scrapeConnections = (await activity()).filter((a) => a.application_name === SCRAPE_APPLICATION_NAME);
    expect(scrapeConnections).toHaveLength(1);
    expect(scrapeConnections[0]!.query).toMatch(/webhook_messages/);
  });

  it('keeps syncing batches published while the scrapers run, and reads PostgreSQL at most once per SCRAPE_REUSE_MS', async () => {
    const before = await refreshes(w.metrics, 'postgres');
    const started = Date.now();
    const running = scrapers(w.url);
    let answers: Answer[];
    try {
      const events = Array.from({ length: 20 }, (_, i) => ({ batchId: `during-${i}`, name: `During ${i}`, subject: 'Maths' }));
      expect((await call(`${w.url}/v1/batches`, { method: 'POST', headers: BEARER, json: events })).status).toBe(202);
      await untilAllSynced(
        h,
        events.map((e) => e.batchId),
      );
    } finally {
      answers = await running.stop();
    }
    const elapsed = Date.now() - started;
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(answers.length).toBeGreaterThanOrEqual(SCRAPERS);
    expect((await refreshes(w.metrics, 'postgres')) - before).toBeLessThanOrEqual(allowedReads(elapsed));
  });

  it('answers while a count is blocked by a lock; PostgreSQL cancels the count, and the sync pool stays free', async () => {
    const errorsBefore = sample((await call(`${w.url}/metrics`)).text, 'classroom_sync_scrape_errors_total', '{source="postgres"}')!;
    const locker = new pg.Client({ connectionString: h.config.databaseUrl, application_name: 'metrics-guard test lock' });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table batch_classes in access exclusive mode');
      // Storms until one brings a read under the lock (the last read is reused for a few seconds).
      const blockedRead = waitFor(
        async () => {
          const answers = await storm(w.url);
          expect(answers.filter((a) => a.status !== 200)).toEqual([]);
          return answers.find((a) => sample(a.text, 'classroom_sync_scrape_errors_total', '{source="postgres"}')! > errorsBefore);
        },
        'a scrape whose PostgreSQL read failed under the lock',
        60_000,
      );
      blockedRead.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
      const waiting = await waitFor(
        async () => {
          const counts = (await activity()).filter((a) => a.wait_event_type === 'Lock' && a.query.includes('count('));
          return counts.length > 0 ? counts : undefined;
        },
        'a count waiting for the lock',
        60_000,
      );
      // The one count waiting is the scrape's, on its own connection; the sync pool still answers
      // (were the counts on it, each scrape's would hold one of its connections until the lock went).
      expect(waiting.map((a) => a.application_name)).toEqual([SCRAPE_APPLICATION_NAME]);
      expect((await w.runtime.database.pool.query('select 1 as ok')).rows).toEqual([{ ok: 1 }]);

      const answer = await blockedRead;
      // As with any failed source: its gauges absent (stale numbers would look healthy), the error counted.
      expect(sample(answer.text, 'classroom_sync_batches', '{state="synced"}')).toBeUndefined();
      expect(sample(answer.text, 'classroom_sync_queue_jobs', '{queue="batch-sync",state="completed"}')).toBeDefined();
      // PostgreSQL itself cancels the count (statement_timeout) while the lock is still held: the
      // scrape only stopped waiting, and pg's client would wait 30 s (query_timeout) before giving up.
      // (pg's pool then drops the connection the error came on; the next read opens another.)
      await waitFor(
        async () => !(await activity()).some((a) => a.application_name === SCRAPE_APPLICATION_NAME && a.state === 'active'),
        "the scrape's count cancelled by its statement_timeout",
        20_000,
      );
      expect((await w.runtime.database.pool.query('select 1 as ok')).rows).toEqual([{ ok: 1 }]);
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
    // Once the lock is gone, a later read brings the counts back.
    await waitFor(
      async () => sample((await call(`${w.url}/metrics`)).text, 'classroom_sync_batches', '{state="synced"}') === 25,
      'the batch counts back after the lock',
      30_000,
    );
  });

  it('with --metrics-auth, scrapes without the token are refused before anything is read', async () => {
    const guarded = await startTestWorker(h, {}, { metricsAuth: true });
    try {
      const refused = await storm(guarded.url);
      expect(refused.map((a) => a.status)).toEqual(Array(SCRAPERS).fill(401));
      expect(await refreshes(guarded.metrics, 'postgres')).toBe(0);
      expect(await refreshes(guarded.metrics, 'redis')).toBe(0);
      const allowed = await storm(guarded.url, BEARER);
      expect(allowed.filter((a) => a.status !== 200)).toEqual([]);
      expect(await refreshes(guarded.metrics, 'postgres')).toBeGreaterThanOrEqual(1);
    } finally {
      await guarded.stop();
    }
  });
});
