// The heartbeat that keeps a run's lease: it renews while the run lives, stops the run the moment a
// renewal fails, and a process that cannot renew (frozen, its database gone) stops acting as the
// owner once the lease's local deadline has passed.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.ts';
import { LeaseLostError } from '../../src/mapping/index.ts';
import { LeaseKeeper } from '../../src/sync/lease-keeper.ts';

const logger = createLogger({ level: 'silent' });
const LEASE_MS = 300;

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function keeper(renew: () => Promise<unknown>, leaseMs = LEASE_MS): LeaseKeeper {
  return new LeaseKeeper({ leaseMs, batchId: 'B-1', renew, logger, grantedAt: performance.now() });
}

describe('LeaseKeeper', () => {
  it('renews the lease while the run lives, and stops renewing once stopped', async () => {
    let renewals = 0;
    const k = keeper(async () => {
      renewals += 1;
    });
    await until(() => renewals >= 3, 'three renewals');
    k.assertOwned();
    expect(k.signal.aborted).toBe(false);
    k.stop();
    const stoppedAt = renewals;
    await new Promise((r) => setTimeout(r, LEASE_MS));
    expect(renewals).toBe(stoppedAt);
  });

  it('a failed renewal stops the run at once: the signal aborts with why, and no call may leave', async () => {
    const lost = new LeaseLostError('B-1');
    const k = keeper(async () => {
      throw lost;
    });
    await until(() => k.signal.aborted, 'the signal to abort');
    expect(k.signal.reason).toBe(lost);
    expect(k.lost).toBe(lost);
    expect(() => k.assertOwned()).toThrow(lost);
  });

  it('a renewal that never answers: past the local deadline the run is no longer the owner', async () => {
    const k = keeper(() => new Promise(() => {}));
    k.assertOwned();
    await until(() => {
      try {
        k.assertOwned();
        return false;
      } catch (error) {
        return error instanceof LeaseLostError;
      }
    }, 'the local deadline to pass');
    expect(k.signal.aborted).toBe(true);
    k.stop();
  });

  it("a run's own writes count as renewals: no heartbeat statement while they come often enough", async () => {
    let renewals = 0;
    // A 3 s lease written every 30 ms: a heartbeat would be due only after a second without a write.
    const k = keeper(async () => {
      renewals += 1;
    }, 3_000);
    for (let i = 0; i < 10; i++) {
      k.renewed(performance.now());
      await new Promise((r) => setTimeout(r, 30));
    }
    k.assertOwned();
    expect(renewals).toBe(0);
    k.stop();
  });
});
