import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { checkAuth, type SandboxCredentials } from '../../src/sandbox/auth.ts';
import { faultConfigFromFlags } from '../../src/cli/sandbox-flags.ts';
import { createFaultController, mixedFaultRates } from '../../src/sandbox/faults.ts';
import { mulberry32 } from '../../src/sandbox/random.ts';
import { createRateLimiter } from '../../src/sandbox/rateLimit.ts';
import { buildListing } from '../../src/sandbox/records.ts';
import { createStore } from '../../src/sandbox/store.ts';

describe('sandbox PRNG and fault decisions', () => {
  it('mulberry32 replays a seed', () => {
    const a = mulberry32(1);
    const b = mulberry32(1);
    const draws = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(draws);
    expect(draws.every((d) => d >= 0 && d < 1)).toBe(true);
  });

  it('random faults follow the configured rates and replay with the seed', () => {
    const decide = (seed: number) => {
      const faults = createFaultController({ rates: { error5xx: 0.2 }, perOperation: { addClass: { lostResponse: 0.5 } } }, seed);
      return Array.from({ length: 2000 }, (_, i) => faults.decide(i % 2 ? 'addClass' : 'getClass'));
    };
    const run = decide(3);
    expect(decide(3)).toEqual(run);
    const getClass = run.filter((_, i) => i % 2 === 0);
    const addClass = run.filter((_, i) => i % 2 === 1);
    expect(getClass.every((f) => f === undefined || f === 'error5xx')).toBe(true);
    expect(addClass.every((f) => f === undefined || f === 'lostResponse')).toBe(true);
    expect(getClass.filter(Boolean).length / 1000).toBeCloseTo(0.2, 1);
    expect(addClass.filter(Boolean).length / 1000).toBeCloseTo(0.5, 1);
  });

  it('one-shot faults come first and run out', () => {
    const faults = createFaultController({}, 1);
    faults.enqueue({ operation: 'editClass', fault: 'hang', count: 2 });
    expect(faults.decide('addClass')).toBeUndefined();
    expect([faults.decide('editClass'), faults.decide('editClass'), faults.decide('editClass')]).toEqual(['hang', 'hang', undefined]);
  });

  it('latency stays within latency + jitter', () => {
    const faults = createFaultController({ latencyMs: 10, latencyJitterMs: 5 }, 1);
    const samples = Array.from({ length: 200 }, () => faults.latencyMs());
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(10);
    expect(Math.max(...samples)).toBeLessThanOrEqual(15);
  });

  it('rejects rates that add up to more than 1', () => {
    expect(() => createFaultController({ rates: { error5xx: 0.6, hang: 0.6 } })).toThrow(/at most 1/);
  });
});

describe('sandbox rate limiter', () => {
  it('admits N per window and refuses (without counting) the rest', () => {
    const limiter = createRateLimiter();
    const admitted = Array.from({ length: 5 }, (_, i) => limiter.admit(i, 3, 1_000));
    expect(admitted).toEqual([true, true, true, false, false]);
    expect(limiter.admit(999, 3, 1_000)).toBe(false);
    expect(limiter.admit(1_000, 3, 1_000)).toBe(true); // the call at t=0 has left the window
    expect(limiter.admit(1_000, undefined, 1_000)).toBe(true);
  });
});

describe('sandbox CLI flags', () => {
  const none = { fault: [], listingIds: true };
  it('builds a fault config, layering per-operation faults over global ones', () => {
    const config = faultConfigFromFlags({ ...none, failRate: 0.2, fault: ['addClass:hang=0.1', 'bodyRejected=0.05'], latency: 20 });
    expect(config.latencyMs).toBe(20);
    expect(config.rates?.bodyRejected).toBe(0.05);
    expect(config.perOperation?.addClass?.hang).toBe(0.1);
    expect(config.perOperation?.addClass?.error5xx).toBeCloseTo(0.05);
    const total = Object.values(mixedFaultRates(0.2)).reduce((a, b) => a + (b ?? 0), 0);
    expect(total).toBeCloseTo(0.2);
  });

  it('names the bad flag', () => {
    expect(() => faultConfigFromFlags({ ...none, fault: ['explode=0.1'] })).toThrow(InvalidArgumentError);
    expect(() => faultConfigFromFlags({ ...none, fault: ['nowhere:hang=0.1'] })).toThrow(/operation/);
    expect(() => faultConfigFromFlags({ ...none, fault: ['hang=0.9', 'error5xx=0.9'] })).toThrow(/at most 1/);
  });
});

describe('sandbox auth', () => {
  const creds: SandboxCredentials = { userId: 'u', apiKey: 'k', xApiKey: 'x', userAgent: 'ua', namespace: 'ns', namespaceHeader: 'x-wise-namespace' };
  const good = { authorization: `Basic ${Buffer.from('u:k').toString('base64')}`, 'x-api-key': 'x', 'user-agent': 'ua', 'x-wise-namespace': 'ns' };
  it('passes good headers and names the first bad one', () => {
    expect(checkAuth(good, creds)).toBeUndefined();
    expect(checkAuth({ ...good, authorization: 'Basic !!!' }, creds)).toMatchObject({ status: 401 });
    expect(checkAuth({ ...good, 'user-agent': 'x' }, creds)?.message).toMatch(/user-agent/);
    const { 'x-wise-namespace': _, ...spec } = good;
    expect(checkAuth({ ...spec, 'x-service-namespace': 'ns' }, creds)?.message).toMatch(/sent x-service-namespace instead/);
  });
});

describe('sandbox store and listing', () => {
  const store = () => createStore({ instituteIds: ['i'], seed: 1, clock: () => 1_000, linkBase: () => 'http://sb' });
  it('makes unique 24-hex ids, reproducibly', () => {
    const a = store();
    const ids = Array.from({ length: 1000 }, () => a.create({ name: 'n', subject: 's', instituteId: 'i' })._id);
    expect(new Set(ids).size).toBe(1000);
    expect(ids.every((id) => /^[0-9a-f]{24}$/.test(id))).toBe(true);
    expect(store().create({ name: 'n', subject: 's', instituteId: 'i' })._id).toBe(ids[0]);
  });

  it('join links are class id + 8 hex, idempotent, restorable after blanking', () => {
    const s = store();
    const { _id } = s.create({ name: 'n', subject: 's', instituteId: 'i' });
    const link = s.setJoinLink(_id, true)?.joinMagicLink;
    expect(link).toMatch(new RegExp(`^http://sb/classroom/join/${_id}[0-9a-f]{8}$`));
    expect(s.setJoinLink(_id, true)?.joinMagicLink).toBe(link);
    s.blankLink(_id);
    expect(s.setJoinLink(_id, true)?.joinMagicLink).toBe(link);
  });

  it('listing leaves out classes younger than the delay', () => {
    const s = store();
    s.create({ name: 'n', subject: 's', instituteId: 'i' });
    const list = (createdNoLaterThan: number) => buildListing(s.classesOf('i') ?? [], { showCoTeachers: true, includeIds: true, createdNoLaterThan });
    expect(list(999).classes).toHaveLength(0);
    expect(list(1_000).classes).toHaveLength(1);
  });
});
