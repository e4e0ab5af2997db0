import { describe, expect, it } from 'vitest';
import { type FaultConfig, createFaultController, faultConfigSchema } from '../../src/sandbox/faults.ts';
import { deriveSeed, mulberry32 } from '../../src/sandbox/random.ts';
import { buildListing } from '../../src/sandbox/records.ts';
import { readable, replicaView } from '../../src/sandbox/replica.ts';
import { createStore } from '../../src/sandbox/store.ts';

describe('sandbox read lag: seeded delays', () => {
  it('draws each delay in [0, readLagMs], replays with the seed, and is 0 without lag', () => {
    const draws = (seed: number) => {
      const faults = createFaultController({ readLagMs: 1_000 }, seed);
      return Array.from({ length: 500 }, () => faults.readLagMs());
    };
    const run = draws(3);
    expect(draws(3)).toEqual(run);
    expect(draws(4)).not.toEqual(run);
    expect(Math.min(...run)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...run)).toBeLessThanOrEqual(1_000);
    expect(Math.max(...run)).toBeGreaterThan(900); // spread over the range, not stuck near 0
    expect(createFaultController({}, 3).readLagMs()).toBe(0);
  });

  it('readLagMinMs floors each delay: [min, max], and min = max is a fixed lag', () => {
    const floored = lagDraws({ readLagMs: 1_000, readLagMinMs: 600 });
    expect(Math.min(...floored)).toBeGreaterThanOrEqual(600);
    expect(Math.max(...floored)).toBeLessThanOrEqual(1_000);
    expect(Math.min(...floored)).toBeLessThan(640); // spread over the range, not stuck at either end
    expect(Math.max(...floored)).toBeGreaterThan(960);
    expect(new Set(lagDraws({ readLagMs: 8_000, readLagMinMs: 8_000 }))).toEqual(new Set([8_000]));
    expect(createFaultController({ readLagMs: 0, readLagMinMs: 0 }, 3).readLagMs()).toBe(0);
  });

  it('without a floor (or a floor of 0) draws what it always drew, from stream 5 of the seed', () => {
    const lagRandom = mulberry32(deriveSeed(7, 5));
    const before = Array.from({ length: 200 }, () => Math.floor(lagRandom() * 1_001));
    expect(lagDraws({ readLagMs: 1_000 }).slice(0, 200)).toEqual(before);
    expect(lagDraws({ readLagMs: 1_000, readLagMinMs: 0 }).slice(0, 200)).toEqual(before);
  });

  it('refuses a floor above the ceiling, naming readLagMinMs', () => {
    const issue = (config: FaultConfig) => faultConfigSchema.safeParse(config).error?.issues[0];
    expect(issue({ readLagMs: 1_000, readLagMinMs: 1_001 })).toMatchObject({ path: ['readLagMinMs'], message: expect.stringMatching(/readLagMs: 1000 ms/) });
    expect(issue({ readLagMinMs: 1 })?.path).toEqual(['readLagMinMs']);
    expect(issue({ readLagMs: 1_000, readLagMinMs: 1_000 })).toBeUndefined();
    expect(() => createFaultController({ readLagMs: 10, readLagMinMs: 20 })).toThrow(/readLagMinMs/);
  });

  it('does not shift the fault or latency streams', () => {
    const sequence = (readLagMs: number | undefined) => {
      const faults = createFaultController({ rates: { error5xx: 0.3 }, latencyJitterMs: 50, ...(readLagMs ? { readLagMs } : {}) }, 9);
      return Array.from({ length: 200 }, () => {
        faults.readLagMs();
        return [faults.decide('addClass'), faults.latencyMs()];
      });
    };
    expect(sequence(5_000)).toEqual(sequence(undefined));
  });
});

/** 500 visibility delays from seed 7. */
function lagDraws(config: FaultConfig): number[] {
  const faults = createFaultController(config, 7);
  return Array.from({ length: 500 }, () => faults.readLagMs());
}

describe('sandbox read lag: what reads see, on an injected clock', () => {
  let now = 10_000;
  const store = () => createStore({ instituteIds: ['i'], seed: 1, clock: () => now, linkBase: () => 'http://sb' });
  const list = (s: ReturnType<typeof store>) =>
    buildListing(s.classesOf('i') ?? [], { showCoTeachers: true, includeIds: true, createdNoLaterThan: now, readableAt: now });

  it('a class is unreadable and unlisted until createdAt + its lag; hand-made classes at once', () => {
    now = 10_000;
    const s = store();
    const lagged = s.create({ name: 'Lagged', subject: 's', instituteId: 'i', readLagMs: 300 });
    const handMade = s.create({ name: 'Hand made', subject: 's', instituteId: 'i' });
    expect(readable(lagged, now)).toBe(false);
    expect(readable(handMade, now)).toBe(true);
    expect(list(s).classes.map((c) => c.name)).toEqual(['Hand made']);
    now += 299;
    expect(readable(lagged, now)).toBe(false);
    now += 1;
    expect(readable(lagged, now)).toBe(true);
    expect(list(s).classes.map((c) => c.name)).toEqual(['Lagged', 'Hand made']);
  });

  it('a newly enabled join link reads as "" with no token config until its own lag has passed', () => {
    now = 20_000;
    const s = store();
    const { _id } = s.create({ name: 'n', subject: 's', instituteId: 'i' });
    const record = s.setJoinLink(_id, true, () => 500)!;
    expect(record.joinMagicLink).not.toBe(''); // the primary has it at once
    expect(replicaView(record, now)).toMatchObject({ joinMagicLink: '', magicJoinToken: undefined });
    now += 500;
    expect(replicaView(record, now).joinMagicLink).toBe(record.joinMagicLink);
    expect(replicaView(record, now).magicJoinToken).toEqual(record.magicJoinToken);
  });

  it('re-enabling a live link neither draws a new lag nor changes the link', () => {
    now = 30_000;
    const s = store();
    const { _id } = s.create({ name: 'n', subject: 's', instituteId: 'i' });
    const link = s.setJoinLink(_id, true, () => 1_000)!.joinMagicLink;
    now += 600;
    let asked = 0;
    const again = s.setJoinLink(_id, true, () => ++asked * 5_000)!;
    expect(asked).toBe(0);
    expect(again.joinMagicLink).toBe(link);
    expect(again.linkReadableFrom).toBe(31_000);
    now += 400;
    expect(replicaView(again, now).joinMagicLink).toBe(link);
  });
});
