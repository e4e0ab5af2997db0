import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { faultConfigFromFlags } from '../../src/cli/sandbox-flags.ts';

const none = { fault: [], listingIds: true };

describe('sandbox CLI flags: names, read lag, refused key', () => {
  it('name flags become a nameRewrite rule; without them names are kept as sent', () => {
    const config = faultConfigFromFlags({ ...none, normalizeNames: true, nameCase: 'upper', cutNames: 40, cutEllipsis: true });
    expect(config.nameRewrite).toMatchObject({ normalize: true, case: 'upper', maxLength: 40, ellipsis: true });
    expect(faultConfigFromFlags({ ...none, nameCase: 'lower' }).nameRewrite).toMatchObject({ case: 'lower' });
    expect(faultConfigFromFlags(none).nameRewrite).toBeUndefined();
  });

  it('--read-lag becomes readLagMs', () => {
    expect(faultConfigFromFlags({ ...none, readLag: 2_000 }).readLagMs).toBe(2_000);
    expect(faultConfigFromFlags(none).readLagMs).toBeUndefined();
  });

  it('--read-lag-min becomes readLagMinMs, the floor under --read-lag', () => {
    expect(faultConfigFromFlags({ ...none, readLag: 8_000, readLagMin: 8_000 })).toMatchObject({ readLagMs: 8_000, readLagMinMs: 8_000 });
    expect(faultConfigFromFlags({ ...none, readLag: 2_000 }).readLagMinMs).toBeUndefined();
  });

  it('--refuse-key refuses with 401 until cleared; status and duration are optional', () => {
    expect(faultConfigFromFlags({ ...none, refuseKey: true }).refuseKey).toBeDefined();
    expect(faultConfigFromFlags({ ...none, refuseKey: true }).refuseKey?.status).toBeUndefined();
    const timed = faultConfigFromFlags({ ...none, refuseKey: true, refuseKeyStatus: 403, refuseKeyFor: 30_000 });
    expect(timed.refuseKey).toMatchObject({ status: 403, forMs: 30_000 });
    expect(faultConfigFromFlags(none).refuseKey).toBeUndefined();
  });

  it('a bad value is refused naming the flag that carried it', () => {
    const error = (flags: Record<string, unknown>) => {
      try {
        faultConfigFromFlags({ ...none, ...flags });
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidArgumentError);
        return (e as Error).message;
      }
      return 'accepted';
    };
    expect(error({ nameCase: 'title' })).toBe('--name-case: must be one of lower, upper');
    expect(error({ cutNames: 0 })).toBe('--cut-names: must be at least 1');
    expect(error({ cutEllipsis: true })).toBe('--cut-ellipsis needs --cut-names <n>');
    expect(error({ readLag: 7_200_000 })).toMatch(/^--read-lag: /);
    expect(error({ readLag: 1_000, readLagMin: 2_000 })).toBe('--read-lag-min: must not exceed the read lag it is the floor of (readLagMs: 1000 ms)');
    expect(error({ readLagMin: 1_000 })).toBe('--read-lag-min needs --read-lag <ms>');
    expect(error({ refuseKey: true, refuseKeyStatus: 500 })).toBe('--refuse-key-status: must be 401 or 403');
    expect(error({ refuseKey: true, refuseKeyFor: 0 })).toBe('--refuse-key-for: must be at least 1');
    expect(error({ refuseKeyStatus: 403 })).toBe('--refuse-key-status needs --refuse-key');
    expect(error({ refuseKeyFor: 1_000 })).toBe('--refuse-key-for needs --refuse-key');
    expect(error({ latency: -1 })).toMatch(/^--latency: /);
  });
});
