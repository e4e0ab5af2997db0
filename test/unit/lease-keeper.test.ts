// The heartbeat that keeps a run's lease: it renews while the run lives, stops the run the moment a
// renewal fails, and a process that cannot renew (frozen, its database gone) stops acting as the
// owner once the lease's local deadline has passed. Timed by a clock the test moves by hand: the
// counts and the moments are exact, and no real time passes.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.ts';
import { LeaseLostError } from '../../src/mapping/index.ts';
import { LeaseKeeper } from '../../src/sync/lease-keeper.ts';
import { type ManualClock, manualClock } from '../helpers/clock.ts';

const logger = createLogger({ level: 'silent' });
const LEASE_MS = 300;
/** The local deadline falls this much before the database's expiry (a tenth of the lease, at most 250 ms). */
const GUARD_MS = LEASE_MS / 10;

function keeper(clock: ManualClock, renew: () => Promise<unknown>, leaseMs = LEASE_MS): LeaseKeeper {
  return new LeaseKeeper({ leaseMs, batchId: 'B-1', renew, logger, grantedAt: clock.now(), clock });
}

/** Whether the keeper still owns the lease by its own clock (what a request checks right before it leaves). */
function owns(k: LeaseKeeper): boolean {
  try {
    k.assertOwned();
    return true;
  } catch (error) {
    if (error instanceof LeaseLostError) return false;
    throw error;
  }
}

describe('LeaseKeeper', () => {
  it('renews the lease every third of it while the run lives, and not once stopped', async () => {
    const clock = manualClock();
    const renewedAt: number[] = [];
    const k = keeper(clock, async () => {
      renewedAt.push(clock.now());
    });
    await clock.advance(LEASE_MS);
    expect(renewedAt).toEqual([100, 200, 300]);
    expect(owns(k)).toBe(true);
    expect(k.signal.aborted).toBe(false);
    k.stop();
    await clock.advance(10 * LEASE_MS);
    expect(renewedAt).toEqual([100, 200, 300]);
    expect(clock.pending()).toBe(0);
  });

  it('a failed renewal stops the run at once: the signal aborts with why, and no call may leave', async () => {
    const clock = manualClock();
    const lost = new LeaseLostError('B-1');
    let renewals = 0;
    const k = keeper(clock, async () => {
      renewals += 1;
      throw lost;
    });
    await clock.advance(LEASE_MS / 3 - 1);
    expect(k.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(renewals).toBe(1);
    expect(k.signal.aborted).toBe(true);
    expect(k.signal.reason).toBe(lost);
    expect(k.lost).toBe(lost);
    expect(() => k.assertOwned()).toThrow(lost);
    // Nothing more is tried.
    await clock.advance(10 * LEASE_MS);
    expect(renewals).toBe(1);
  });

  it('a renewal that never answers: from the local deadline on, the run is no longer the owner', async () => {
    const clock = manualClock();
    const k = keeper(clock, () => new Promise(() => {}));
    await clock.advance(LEASE_MS - GUARD_MS - 1);
    expect(owns(k)).toBe(true);
    expect(k.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(owns(k)).toBe(false);
    expect(k.signal.aborted).toBe(true);
    k.stop();
  });

  it('a process frozen past its deadline stops when it wakes, without renewing', async () => {
    const clock = manualClock();
    let renewals = 0;
    const k = keeper(clock, async () => {
      renewals += 1;
    });
    clock.jump(LEASE_MS);
    // The heartbeat due at a third of the lease fires now, late: past the deadline, it renews nothing.
    await clock.advance(0);
    expect(renewals).toBe(0);
    expect(k.lost).toBeInstanceOf(LeaseLostError);
    expect(k.signal.aborted).toBe(true);
  });

  it("a run's own writes count as renewals: no heartbeat statement while they come often enough", async () => {
    const clock = manualClock();
    let renewals = 0;
    // A 3 s lease written every 30 ms: a heartbeat is due only a second after the last write.
    const k = keeper(
      clock,
      async () => {
        renewals += 1;
      },
      3_000,
    );
    for (let i = 0; i < 100; i++) {
      k.renewed(k.now());
      await clock.advance(30);
    }
    expect(owns(k)).toBe(true);
    expect(renewals).toBe(0);
    // The last write was sent 30 ms ago.
    await clock.advance(1_000 - 30 - 1);
    expect(renewals).toBe(0);
    await clock.advance(1);
    expect(renewals).toBe(1);
    k.stop();
  });

  it('no renewal starts while a write of the run is in flight; one starts soon after it ends', async () => {
    const clock = manualClock();
    let renewals = 0;
    const k = keeper(clock, async () => {
      renewals += 1;
    });
    let finish = () => {};
    const write = k.whileWriting(() => new Promise<void>((resolve) => (finish = resolve)));
    await clock.advance((2 * LEASE_MS) / 3);
    expect(renewals).toBe(0);
    finish();
    await write;
    // The heartbeat looks again every thirtieth of the lease while a write is in flight.
    await clock.advance(LEASE_MS / 30);
    expect(renewals).toBe(1);
    k.stop();
  });

  it("a renewal that fails beside a write is the write's business: the run goes on", async () => {
    const clock = manualClock();
    let refuse = (_error: Error) => {};
    const k = keeper(clock, () => new Promise((_resolve, reject) => (refuse = reject)));
    await clock.advance(LEASE_MS / 3);
    let finish = () => {};
    const write = k.whileWriting(() => new Promise<void>((resolve) => (finish = resolve)));
    refuse(new LeaseLostError('B-1'));
    await clock.advance(0);
    expect(k.lost).toBeUndefined();
    expect(k.signal.aborted).toBe(false);
    finish();
    await write;
    k.stop();
  });
});
