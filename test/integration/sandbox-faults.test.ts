import { describe, expect, it } from 'vitest';
import { type FaultKind, mixedFaultRates } from '../../src/sandbox/index.ts';
import { manualClock } from '../helpers/clock.ts';
import { addClass, call, eventually, listing, start, useSandbox } from '../helpers/sandbox.ts';

const sb = useSandbox();

const once = (fault: FaultKind) => sb.faults.enqueue({ operation: 'addClass', fault });
const stored = () => sb.state().classes ?? [];

describe('sandbox faults: one per call, observable', () => {
  it('error5xx: a 5xx and nothing stored', async () => {
    once('error5xx');
    const res = await addClass(sb);
    expect([500, 502, 503]).toContain(res.status);
    expect(res.json.status).toBe(res.status);
    expect(stored()).toHaveLength(0);
    expect(sb.state().calls.faultsInjected).toEqual({ error5xx: 1 });
  });

  it('error5xxAfterStore: a 5xx but the class exists', async () => {
    once('error5xxAfterStore');
    expect((await addClass(sb)).status).toBeGreaterThanOrEqual(500);
    expect(stored()).toHaveLength(1);
  });

  it('lostResponse: fetch rejects, the class is in the ground truth', async () => {
    once('lostResponse');
    await expect(addClass(sb, 'Lost')).rejects.toThrow();
    expect(stored().map((c) => c.name)).toEqual(['Lost']);
    expect(sb.state().byName).toEqual({ Lost: 1 });
  });

  it('hang: no answer, ever: the class is stored, the client giving up frees the request, else the connection drops after hangMs', async () => {
    const timers = manualClock();
    const other = await start({ timers, faults: { hangMs: 30_000 } });
    try {
      other.faults.enqueue({ operation: 'addClass', fault: 'hang', count: 2 });
      const controller = new AbortController();
      const givenUp = addClass(other, 'Given up', { signal: controller.signal });
      // Stored, and held: the only way on is the hang's own timer.
      await eventually(() => expect(timers.dueIn()).toEqual([30_000]));
      expect(other.store.size).toBe(1);
      controller.abort();
      await expect(givenUp).rejects.toThrow(/abort/i);
      await eventually(() => expect(timers.pending()).toBe(0));

      let settled = false;
      const held = addClass(other, 'Held').finally(() => {
        settled = true;
      });
      await eventually(() => expect(timers.dueIn()).toEqual([30_000]));
      await timers.advance(29_999);
      expect(settled).toBe(false);
      await timers.advance(1);
      // Dropped, not answered: fetch fails.
      await expect(held).rejects.toThrow();
      expect(other.state().byName).toEqual({ 'Given up': 1, Held: 1 });
    } finally {
      await other.close();
    }
  });

  it('hang: close() does not wait for a held request', async () => {
    // The hang holds for its default 10 minutes: nothing moves these timers.
    const timers = manualClock();
    const other = await start({ timers });
    other.faults.enqueue({ operation: '*', fault: 'hang' });
    const pending = addClass(other).catch((error: unknown) => error);
    await eventually(() => expect(timers.pending()).toBe(1));
    expect(other.store.size).toBe(1);
    await other.close();
    expect(timers.pending()).toBe(0);
    expect(await pending).toBeInstanceOf(Error);
  });

  it('throttle: 429 with Retry-After; throttleNoRetryAfter: 429 without; nothing stored', async () => {
    sb.faults.set({ retryAfterSeconds: 7 });
    once('throttle');
    once('throttleNoRetryAfter');
    const first = await addClass(sb);
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('7');
    const second = await addClass(sb);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBeNull();
    expect(stored()).toHaveLength(0);
  });

  it('bodyError: HTTP 200 with status 500 in the body, class stored; bodyRejected: status 400, not stored', async () => {
    once('bodyError');
    const error = await addClass(sb, 'Stored anyway');
    expect(error.status).toBe(200);
    expect(error.json).toMatchObject({ status: 500 });
    once('bodyRejected');
    const rejected = await addClass(sb, 'Not stored');
    expect(rejected.status).toBe(200);
    expect(rejected.json).toMatchObject({ status: 400 });
    expect(stored().map((c) => c.name)).toEqual(['Stored anyway']);
  });

  it('nonJsonBody and truncatedBody: a 2xx that does not parse, class stored', async () => {
    once('nonJsonBody');
    const html = await addClass(sb);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/text\/html/);
    expect(html.json).toBeUndefined();
    once('truncatedBody');
    const cut = await addClass(sb);
    expect(cut.status).toBe(200);
    expect(cut.text.startsWith('{"status":200')).toBe(true);
    expect(cut.json).toBeUndefined();
    expect(stored()).toHaveLength(2);
  });

  it('unsafeId: the class is stored, but the answer calls it "../<id>"', async () => {
    once('unsafeId');
    const res = await addClass(sb, 'Traversal');
    expect(res.status).toBe(200);
    expect(res.json.status).toBe(200);
    const [truth] = stored();
    expect(truth?.name).toBe('Traversal');
    expect(res.json.data._id).toBe(`../${truth!.id}`);
    expect(sb.state().calls.faultsInjected).toEqual({ unsafeId: 1 });
  });

  it('unsafeId on get-class and on the listing: every class id carries a "/"; errors are left alone', async () => {
    const id = (await addClass(sb, 'Listed')).json.data._id as string;
    sb.faults.enqueue({ operation: 'getClass', fault: 'unsafeId', count: 2 });
    expect((await call(sb, 'GET', `/user/v2/classes/${id}?full=true`)).json.data._id).toBe(`../${id}`);
    const missing = await call(sb, 'GET', '/user/v2/classes/000000000000000000000000');
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ status: 404 });
    sb.store.hide(id);
    await addClass(sb, 'Visible');
    sb.faults.enqueue({ operation: 'listClasses', fault: 'unsafeId' });
    const { json } = await listing(sb);
    const items = [...json.data.classes, ...json.data.hiddenClasses] as { _id: string; name: string }[];
    expect(items.map((i) => i.name).sort()).toEqual(['Listed', 'Visible']);
    for (const item of items) expect(item._id).toMatch(/^\.\.\/[0-9a-f]{24}$/);
    expect((await listing(sb)).json.data.classes[0]._id).toMatch(/^[0-9a-f]{24}$/);
  });

  it('mixedFaultRates leaves out unsafeId (and bodyRejected)', () => {
    const mix = mixedFaultRates(1);
    expect(mix).not.toHaveProperty('unsafeId');
    expect(mix).not.toHaveProperty('bodyRejected');
  });

  it('one-shot faults only hit their operation, in order, then stop', async () => {
    sb.faults.enqueue({ operation: 'listClasses', fault: 'error5xx', count: 2 });
    expect((await addClass(sb)).status).toBe(200);
    expect((await listing(sb)).status).toBeGreaterThanOrEqual(500);
    expect((await listing(sb)).status).toBeGreaterThanOrEqual(500);
    expect((await listing(sb)).status).toBe(200);
    expect(sb.faults.queued()).toEqual([]);
  });
});

describe('sandbox faults: rates, limits, listing lag', () => {
  it('rate limit: 429 without Retry-After once the minute is full, admitted again after it', async () => {
    let now = 1_000_000;
    const limited = await start({ clock: () => now, faults: { rateLimitPerMinute: 5 } });
    try {
      for (let i = 0; i < 5; i++) expect((await listing(limited)).status).toBe(200);
      now += 59_000;
      const refused = await addClass(limited);
      expect(refused.status).toBe(429);
      expect(refused.json).toMatchObject({ status: 429 });
      expect(refused.headers.get('retry-after')).toBeNull();
      expect(limited.store.size).toBe(0);
      now += 1_000;
      expect((await addClass(limited)).status).toBe(200);
      expect(limited.state().calls.byOperation.addClass?.outcomes).toEqual({ rateLimited: 1, ok: 1 });
    } finally {
      await limited.close();
    }
  });

  it('latency: fixed plus jitter delays the answer', async () => {
    const timers = manualClock();
    const slow = await start({ timers, faults: { latencyMs: 60, latencyJitterMs: 20 } });
    try {
      let answered = false;
      const answer = listing(slow).finally(() => {
        answered = true;
      });
      await eventually(() => expect(timers.pending()).toBe(1));
      const [latency = 0] = timers.dueIn();
      expect(latency).toBeGreaterThanOrEqual(60);
      expect(latency).toBeLessThanOrEqual(80);
      await timers.advance(latency - 1);
      expect(answered).toBe(false);
      await timers.advance(1);
      expect((await answer).status).toBe(200);
    } finally {
      await slow.close();
    }
  });

  it('the same seed replays the same random faults and ids; another seed does not', async () => {
    const run = async (seed: number) => {
      const other = await start({ seed, faults: { rates: { error5xx: 0.3, bodyError: 0.2 } } });
      try {
        const outcomes: string[] = [];
        for (let i = 0; i < 30; i++) {
          const res = await addClass(other, `c${i}`);
          outcomes.push(`${res.status}/${res.json?.status}/${res.json?.data?._id ?? '-'}`);
        }
        return outcomes;
      } finally {
        await other.close();
      }
    };
    const first = await run(7);
    expect(await run(7)).toEqual(first);
    expect(await run(8)).not.toEqual(first);
    expect(first.filter((o) => o.startsWith('200/200')).length).toBeGreaterThan(5);
    expect(first.some((o) => !o.startsWith('200/200'))).toBe(true);
  });

  it('listingDelayMs: a new class is listed only once it is old enough', async () => {
    let now = 1_000_000;
    const lagging = await start({ clock: () => now, faults: { listingDelayMs: 5_000 } });
    try {
      const id = (await addClass(lagging)).json.data._id;
      expect((await listing(lagging)).json.data.classes).toHaveLength(0);
      expect((await call(lagging, 'GET', `/user/v2/classes/${id}`)).status).toBe(200);
      now += 5_000;
      expect((await listing(lagging)).json.data.classes.map((c: any) => c._id)).toEqual([id]);
    } finally {
      await lagging.close();
    }
  });

  it('listingIncludesIds: false lists items without _id', async () => {
    await addClass(sb);
    sb.faults.set({ listingIncludesIds: false });
    const item = (await listing(sb)).json.data.classes[0];
    expect(item.name).toBe('Algebra 1');
    expect(item).not.toHaveProperty('_id');
  });
});
