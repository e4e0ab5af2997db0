import { describe, expect, it } from 'vitest';
import { createFaultController } from '../../src/sandbox/faults.ts';
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
