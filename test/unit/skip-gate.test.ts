// After PostgreSQL was out for longer than a route stays fresh, a dispatcher without an endpoint
// must not be the first to speak: it skips nothing until every live dispatcher has had time to renew
// its route (src/webhooks/skip-gate.ts).
import { describe, expect, it } from 'vitest';
import { ANNOUNCE_EVERY_MS } from '../../src/webhooks/announce.ts';
import { SKIP_AFTER_RECOVERY_MS, createSkipGate } from '../../src/webhooks/skip-gate.ts';
import { manualClock } from '../helpers/clock.ts';

describe('the skip gate', () => {
  it('is open from the start, closes at a failure, and opens again only after answers for longer than a route renewal', async () => {
    const clock = manualClock();
    const gate = createSkipGate(clock);
    expect(gate.open()).toBe(true);
    gate.reached();
    expect(gate.open()).toBe(true);

    gate.failed();
    expect(gate.open()).toBe(false);
    await clock.advance(5 * 60_000);
    // The outbox answers again: every other dispatcher renews its route within ANNOUNCE_EVERY_MS.
    gate.reached();
    expect(gate.open()).toBe(false);
    await clock.advance(ANNOUNCE_EVERY_MS);
    gate.reached();
    expect(gate.open()).toBe(false);
    await clock.advance(SKIP_AFTER_RECOVERY_MS - ANNOUNCE_EVERY_MS);
    gate.reached();
    expect(gate.open()).toBe(true);
  });

  it('starts counting again at a failure in the middle of the recovery', async () => {
    const clock = manualClock();
    const gate = createSkipGate(clock);
    gate.failed();
    gate.reached();
    await clock.advance(SKIP_AFTER_RECOVERY_MS - 1);
    gate.failed();
    gate.reached();
    await clock.advance(SKIP_AFTER_RECOVERY_MS - 1);
    expect(gate.open()).toBe(false);
    await clock.advance(1);
    expect(gate.open()).toBe(true);
  });
});
