import { describe, expect, it } from 'vitest';
import { createFaultController } from '../../src/sandbox/faults.ts';
import { activeRefusal } from '../../src/sandbox/refusal.ts';

describe('sandbox refused key', () => {
  it('401 by default, 403 on request, with messages that name no class or institute', () => {
    expect(activeRefusal(undefined, 0, 0)).toBeUndefined();
    expect(activeRefusal({}, 0, 0)).toEqual({ status: 401, message: 'invalid credentials: this API key has been revoked' });
    expect(activeRefusal({ status: 403 }, 0, 0)).toEqual({ status: 403, message: 'this API key is suspended' });
  });

  it('with forMs, lapses by itself forMs after set(), on the controller clock', () => {
    let now = 1_000;
    const faults = createFaultController({}, 1, () => now);
    now = 5_000;
    faults.set({ refuseKey: { status: 403, forMs: 300 } });
    expect(faults.keyRefusal()?.status).toBe(403);
    now = 5_299;
    expect(faults.keyRefusal()?.status).toBe(403);
    now = 5_300;
    expect(faults.keyRefusal()).toBeUndefined();
    expect(faults.config.refuseKey).toEqual({ status: 403, forMs: 300 }); // lapsed, not cleared
    faults.set({ refuseKey: {} });
    now = 1_000_000;
    expect(faults.keyRefusal()?.status).toBe(401); // no forMs: until cleared
    faults.clear();
    expect(faults.keyRefusal()).toBeUndefined();
  });
});
