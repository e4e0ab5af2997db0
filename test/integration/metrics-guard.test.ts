// The /metrics guard: however many scrapes arrive at once, PostgreSQL is counted once per
// SCRAPE_REUSE_MS, on a connection of the scrape's own with a statement_timeout, never on the sync
// jobs' pool. Real HTTP over loopback against a worker process; conditions are waited for. The
// worker's scrapes are paced by a clock of the test's, which counts only the time the guard slept:
// the bound "at most one read per SCRAPE_REUSE_MS" is checked on that clock, never on the wall's
// (test/unit/scrape-pacing.test.ts checks the pacing itself, exactly, on a clock moved by hand).
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { SCRAPE_APPLICATION_NAME, SCRAPE_REUSE_MS } from '../../src/metrics/scrape-guard.ts';
import type { Metrics } from '../../src/metrics/metrics.ts';
import { type Clock, monotonicClock } from '../../src/support/clock.ts';
import { untilAllSynced } from '../helpers/batches.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { type Answer, BEARER, call, startTestWorker, useTestWorker } from './http-helpers.ts';

/**
 * Sleeps as long as asked, for real (the pacing stays what a scraper meets), but its time moves
 * only by those sleeps: how much time the guard was given to pace by, whatever the machine's load.
 */
function sleptClock(): Clock {
  let t = 0;
  return {
    now: () => t,
    async sleep(ms) {
      await monotonicClock.sleep(ms);
      t += Math.max(0, ms);
    },
    after: (ms, fn) =>
      monotonicClock.after(ms, () => {
        t += Math.max(0, ms);
        fn();
      }),
  };
}

const clock = sleptClock();
// The remote answers in milliseconds here; a 1 s timeout on a loaded machine would leave add-classes
// in doubt, and batches named "During 1" and "During 10" then wait for an operator, rightly. This
// file is about the scrapes, not about doubt.
const harness = useHarness({ env: { CLASSROOM_TIMEOUT: '15s' } });
const { h } = harness;
const w = useTestWorker(harness, {}, { clock });

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

/** The contract: at most one PostgreSQL read per SCRAPE_REUSE_MS of the guard's clock, counted from the first. */
const allowedReads = (sinceMs: number) => 1 + Math.floor((clock.now() - sinceMs) / SCRAPE_REUSE_MS);

/** The connections to the harness's database, as PostgreSQL sees them. */
async function activity(): Promise<{ application_name: string; state: string; wait_event_type: string | null; query: string }[]> {
  const { rows } = await h.runtime.database.pool.query(
    'select application_name, state, wait_event_type, query from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
    [h.databaseName],
  );
  return rows;
}

describe('/metrics under many scrapers', () => {
  it(`answers ${SCRAPERS} scrapes at once from one PostgreSQL read, made on the scrape's own connection`, async () => {
    const events = Array.from({ length: 5 }, (_, i) => ({ batchId: `g-${i}`, name: `Guard ${i}`, subject: 'Maths' }));
    expect((await call(`${w.url}/v1/batches`, { method: 'POST', headers: BEARER, json: events })).status).toBe(202);
    await untilAllSynced(
      h,
      events.map((e) => e.batchId),
    );

    const before = await refreshes(w.metrics, 'postgres');
    const started = clock.now();
    const answers = await storm(w.url);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(sample(answer.text, 'classroom_sync_batches', '{state="synced"}')).toBe(5);
    }
    const reads = (await refreshes(w.metrics, 'postgres')) - before;
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(allowedReads(started));

    // The counts ran on one connection of the scrape's own: a pool of one, with a statement_timeout.
    const scrapeConnections = (await activity()).filter((a) => a.application_name === SCRAPE_APPLICATION_NAME);
    expect(scrapeConnections).toHaveLength(1);
    expect(scrapeConnections[0]!.query).toMatch(/webhook_messages/);
  });

  it('keeps syncing batches published while the scrapers run, and reads PostgreSQL at most once per SCRAPE_REUSE_MS', async () => {
    const before = await refreshes(w.metrics, 'postgres');
    const started = clock.now();
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
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(answers.length).toBeGreaterThanOrEqual(SCRAPERS);
    expect((await refreshes(w.metrics, 'postgres')) - before).toBeLessThanOrEqual(allowedReads(started));
  });

  it('answers while a count is blocked by a lock; PostgreSQL cancels the count, and the sync pool stays free', async () => {
    const errorsBefore = sample((await call(`${w.url}/metrics`)).text, 'classroom_sync_scrape_errors_total', '{source="postgres"}')!;
    const locker = new pg.Client({ connectionString: h.config.databaseUrl, application_name: 'metrics-guard test lock' });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table batch_counts in access exclusive mode');
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
          const counts = (await activity()).filter((a) => a.wait_event_type === 'Lock' && a.query.includes('batch_counts'));
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
