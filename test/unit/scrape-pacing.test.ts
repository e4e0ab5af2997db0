// Scrape pacing, on a clock the test moves: however many scrapes come, an answer is made at most
// once per SCRAPE_SPACING_MS and PostgreSQL is read at most once per SCRAPE_REUSE_MS. No real time
// passes; the test counts runs and says when each happened.
import { describe, expect, it } from 'vitest';
import { SCRAPE_REUSE_MS, SCRAPE_SPACING_MS, createScrapeGuard } from '../../src/metrics/scrape-guard.ts';
import type { ScrapeSource } from '../../src/metrics/scrape-gauges.ts';
import { paced, singleFlight } from '../../src/metrics/single-flight.ts';
import { type ManualClock, manualClock } from '../helpers/clock.ts';

describe('singleFlight', () => {
  it('runs once for callers that arrive together, and serves that run for reuseMs after it started', async () => {
    const clock = manualClock(1_000);
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
      clock,
    );
    const waiting = Array.from({ length: 10 }, () => guarded());
    expect(runs).toBe(1);
    finish();
    await Promise.all(waiting);
    await clock.advance(4_999);
    await guarded();
    expect(runs).toBe(1);
    await clock.advance(1);
    const next = guarded();
    expect(runs).toBe(2);
    finish();
    await next;
  });
});

describe('paced', () => {
  it('runs at once when the last run is older than intervalMs; sooner, callers wait for the next run and share it', async () => {
    const clock = manualClock();
    let runs = 0;
    const answer = paced(async () => ++runs, 500, clock);
    expect(await answer()).toBe(1);
    await clock.advance(100);
    const three = Promise.all([answer(), answer(), answer()]);
    await clock.advance(399);
    expect(runs).toBe(1);
    await clock.advance(1);
    expect(await three).toEqual([2, 2, 2]);
    expect(clock.sleeps).toEqual([400]);
    await clock.advance(500);
    expect(await answer()).toBe(3);
    expect(clock.sleeps).toEqual([400]);
  });

  it('gives a caller that comes while a run is in flight the next run, never the one that began before it', async () => {
    const clock = manualClock();
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
    await clock.advance(500);
    expect(finishers).toHaveLength(2);
    finishers[1]!();
    expect(await second).toBe(2);
  });
});

/** A scrape guard over stand-ins for the sources, recording at which time of `clock` each read and answer ran. */
function guardOn(clock: ManualClock) {
  const reads: Record<ScrapeSource, number[]> = { postgres: [], redis: [] };
  const answers: number[] = [];
  const guard = createScrapeGuard({
    refresh: async (_sources, only) => {
      for (const source of only) reads[source].push(clock.now());
    },
    render: async () => {
      answers.push(clock.now());
      return `answer ${answers.length}`;
    },
    // Never connected to: the stand-in refresh reads nothing.
    databaseUrl: 'postgres://nobody@127.0.0.1:1/unused',
    sources: () => ({ queues: [] }),
    timeoutMs: 1_000,
    clock,
  });
  return { guard, reads, answers };
}

describe('the /metrics scrape guard', () => {
  it('answers a storm of scrapes that come together with one PostgreSQL read and at most two answers made', async () => {
    const clock = manualClock();
    const { guard, reads, answers } = guardOn(clock);
    try {
      const storm = Promise.all(Array.from({ length: 100 }, () => guard.answer()));
      await clock.advance(SCRAPE_SPACING_MS);
      const texts = (await storm).map((body) => body.toString());
      // The first scrape's answer, then one shared by every scrape that came while it was made.
      expect(new Set(texts)).toEqual(new Set(['answer 1', 'answer 2']));
      expect(answers).toEqual([0, SCRAPE_SPACING_MS]);
      expect(reads.postgres).toEqual([0]);
      expect(reads.redis).toEqual([0, SCRAPE_SPACING_MS]);
    } finally {
      await guard.close();
    }
  });

  it('under scrapes every 100 ms, makes one answer per SCRAPE_SPACING_MS and reads PostgreSQL once per SCRAPE_REUSE_MS', async () => {
    const clock = manualClock();
    const { guard, reads, answers } = guardOn(clock);
    try {
      const scrapes: Promise<Buffer>[] = [];
      for (let at = 0; at < 4 * SCRAPE_REUSE_MS; at += 100) {
        scrapes.push(guard.answer());
        await clock.advance(100);
      }
      await Promise.all(scrapes);
      expect(scrapes).toHaveLength(200);
      const every = (ms: number, until: number) => Array.from({ length: until / ms + 1 }, (_, i) => i * ms);
      expect(answers).toEqual(every(SCRAPE_SPACING_MS, 4 * SCRAPE_REUSE_MS));
      expect(reads.postgres).toEqual(every(SCRAPE_REUSE_MS, 4 * SCRAPE_REUSE_MS));
      // Redis is cheap and read for each answer.
      expect(reads.redis).toEqual(answers);
    } finally {
      await guard.close();
    }
  });

  it('reads nothing once closed', async () => {
    const clock = manualClock();
    const { guard, reads } = guardOn(clock);
    await guard.close();
    await guard.answer();
    expect(reads).toEqual({ postgres: [], redis: [] });
  });
});
