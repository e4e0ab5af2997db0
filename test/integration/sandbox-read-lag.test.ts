import { describe, expect, it } from 'vitest';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.ts';
import { INSTITUTE, addClass, call, listing, start } from '../helpers/sandbox.ts';

// Every test drives the sandbox's clock by hand: the lags are seeded, so no test sleeps.
async function withLag(faults: SandboxOptions['faults'], test: (sb: RunningSandbox, clock: { now: number }) => Promise<void>) {
  const clock = { now: 1_000_000 };
  const sb = await start({ clock: () => clock.now, faults });
  try {
    await test(sb, clock);
  } finally {
    await sb.close();
  }
}

const get = (sb: RunningSandbox, id: string) => call(sb, 'GET', `/user/v2/classes/${id}?full=true`);
const enable = (sb: RunningSandbox, id: string) => call(sb, 'POST', '/teacher/editClass', { body: { classId: id, enableJoinMagicLink: true } });
const listed = async (sb: RunningSandbox) => (await listing(sb)).json.data.classes.map((c: any) => c._id as string);

describe('sandbox read lag over HTTP', () => {
  it('until its lag has passed a new class is 404 to get and edit and missing from the listing; then all see it', async () => {
    await withLag({ readLagMs: 10_000 }, async (sb, clock) => {
      const created = clock.now;
      const id: string = (await addClass(sb, 'Lagging')).json.data._id;
      expect(sb.store.get(id)).toBeDefined(); // written on the "primary" at once

      // Walk the clock until get-class first knows the class; every check before that is "not yet".
      let seenAt: number | undefined;
      while (seenAt === undefined) {
        const got = await get(sb, id);
        if (got.status === 200) {
          seenAt = clock.now;
          break;
        }
        expect(got.json).toEqual({ status: 404, message: `class ${id} not found` });
        expect(await listed(sb)).toEqual([]);
        const edit = await enable(sb, id);
        expect(edit.status).toBe(404);
        expect(edit.json.message).toBe(`classId: class ${id} not found`);
        expect(sb.store.get(id)?.joinMagicLink).toBe(''); // the refused edit changed nothing
        clock.now += 250;
        expect(clock.now - created).toBeLessThanOrEqual(10_250);
      }
      expect(seenAt - created).toBeGreaterThan(0); // seed 42 draws a real lag, so "before" was observed
      expect(await listed(sb)).toEqual([id]);
      expect((await enable(sb, id)).status).toBe(200);
    });
  });

  it('a class is listed only once both the read lag and listingDelayMs have passed', async () => {
    await withLag({ readLagMs: 2_000, listingDelayMs: 5_000 }, async (sb, clock) => {
      const id: string = (await addClass(sb)).json.data._id;
      clock.now += 2_000;
      expect((await get(sb, id)).status).toBe(200);
      expect(await listed(sb)).toEqual([]);
      clock.now += 3_000;
      expect(await listed(sb)).toEqual([id]);
    });
    await withLag({ readLagMs: 10_000, listingDelayMs: 1 }, async (sb, clock) => {
      const id: string = (await addClass(sb)).json.data._id;
      clock.now += 1;
      const visible = (await get(sb, id)).status === 200;
      expect(visible).toBe(false);
      expect(await listed(sb)).toEqual([]);
      clock.now += 10_000;
      expect(await listed(sb)).toEqual([id]);
    });
  });

  it('an enabled join link reads as "" with no token config until its own lag has passed', async () => {
    await withLag({ readLagMs: 10_000 }, async (sb, clock) => {
      const id: string = (await addClass(sb)).json.data._id;
      clock.now += 10_000;
      expect((await enable(sb, id)).status).toBe(200);
      const primary = sb.state().classes?.[0]?.joinMagicLink;
      expect(primary).toMatch(/\/classroom\/join\//); // the write took effect at once

      const early = (await get(sb, id)).json.data;
      expect(early.joinMagicLink).toBe('');
      expect(early.settings.magicJoinTokenConfig).toEqual({});
      clock.now += 10_000;
      const late = (await get(sb, id)).json.data;
      expect(late.joinMagicLink).toBe(primary);
      expect(late.settings.magicJoinTokenConfig.token).toBe(primary?.split('/').pop());
    });
  });

  it('enabling an enabled link again neither restarts its lag nor changes it', async () => {
    await withLag({ readLagMs: 10_000 }, async (sb, clock) => {
      const id: string = (await addClass(sb)).json.data._id;
      clock.now += 10_000;
      await enable(sb, id);
      const link = sb.store.get(id)?.joinMagicLink;
      // A retrying client re-enables every 250 ms; a restarted lag would keep the link hidden.
      for (let waited = 0; waited < 10_000; waited += 250) {
        expect((await enable(sb, id)).status).toBe(200);
        clock.now += 250;
      }
      expect(sb.store.get(id)?.joinMagicLink).toBe(link);
      expect((await get(sb, id)).json.data.joinMagicLink).toBe(link);
    });
  });

  it('hand-made classes are visible at once', async () => {
    await withLag({ readLagMs: 3_600_000 }, async (sb) => {
      const made = await fetch(`${sb.url}/__sandbox/classes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Hand made', instituteId: INSTITUTE }),
      });
      const id: string = ((await made.json()) as any).data.id;
      expect((await get(sb, id)).status).toBe(200);
      expect(await listed(sb)).toEqual([id]);
    });
  });

  it('DELETE /__sandbox/faults ends the lag for classes added afterwards', async () => {
    await withLag({ readLagMs: 3_600_000 }, async (sb) => {
      expect((await fetch(`${sb.url}/__sandbox/faults`, { method: 'DELETE' })).status).toBe(200);
      const id: string = (await addClass(sb)).json.data._id;
      expect((await get(sb, id)).status).toBe(200);
    });
  });
});
