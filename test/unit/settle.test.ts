// When "not listed" may be believed after an add-class of unknown outcome: on evidence that the
// listing would show the class (measured lag, a witness), or after the patience; never before.
import { describe, expect, it } from 'vitest';
import { LAG_FACTOR, LAG_SLACK_MS, MIN_LAG_SAMPLES, type SettleInput, settleNotListed } from '../../src/sync/settle.ts';

const T0 = Date.parse('2026-11-25T10:00:00Z');
const LATE = 10_000;
const READ_LAG = 30_000;

/** An add-class sent at T0 whose answer never came (the client gave up at T0 + 1 s). */
function input(over: Partial<SettleInput> = {}): SettleInput {
  return {
    readAt: T0 + 5_000,
    sentAt: T0,
    endedAt: T0 + 1_000,
    lateMs: LATE,
    readLagMs: READ_LAG,
    listed: new Set(),
    acks: [],
    measured: undefined,
    ...over,
  };
}

const ack = (classId: string, sentAt: number, ackedAt = sentAt + 50) => ({ classId, sentAt: new Date(sentAt), ackedAt: new Date(ackedAt) });
/** `listingFreshMs` null: no listing showed a class of ours in the window. */
const measured = (maxMs: number, samples = MIN_LAG_SAMPLES, listingFreshMs: number | null = 0) => ({
  maxMs,
  samples,
  listingFreshMs: listingFreshMs ?? undefined,
});

describe('settleNotListed', () => {
  it('without evidence, believes "not listed" only once 10 × SYNC_READ_LAG have passed since the add-class could last have taken effect', () => {
    // The client gave up at T0 + 1 s; the remote may act on the request for one more CLASSROOM_TIMEOUT.
    const patienceAt = T0 + 1_000 + LATE + 10 * READ_LAG;
    expect(settleNotListed(input({ readAt: patienceAt - 1 })).believed).toBe(false);
    expect(settleNotListed(input({ readAt: patienceAt }))).toEqual({ believed: true, evidence: { by: 'patience', sinceSentMs: patienceAt - T0 } });
    // Without a known end, the client may have waited a whole CLASSROOM_TIMEOUT for the answer.
    const unknownEnd = T0 + 2 * LATE + 10 * READ_LAG;
    expect(settleNotListed(input({ endedAt: undefined, readAt: unknownEnd - 1 })).believed).toBe(false);
    expect(settleNotListed(input({ endedAt: undefined, readAt: unknownEnd })).believed).toBe(true);
  });

  it('a measured lag far below the time passed settles it: end + CLASSROOM_TIMEOUT + 3 × the largest lag seen + slack', () => {
    const bound = LAG_FACTOR * 200 + LAG_SLACK_MS;
    const at = T0 + 1_000 + LATE + bound;
    expect(settleNotListed(input({ readAt: at - 1, measured: measured(200) })).believed).toBe(false);
    const settled = settleNotListed(input({ readAt: at, measured: measured(200) }));
    expect(settled).toEqual({ believed: true, evidence: { by: 'measured_lag', lagBoundMs: bound, samples: MIN_LAG_SAMPLES, sinceEndMs: at - T0 - 1_000 } });
  });

  it('too few lag samples are no evidence: a rare long lag may not be among them', () => {
    const settled = settleNotListed(input({ readAt: T0 + 100_000, measured: measured(10, MIN_LAG_SAMPLES - 1) }));
    expect(settled.believed).toBe(false);
  });

  it('read samples alone are no evidence: a listing must have been seen as fresh as the reads', () => {
    expect(settleNotListed(input({ readAt: T0 + 100_000, measured: measured(10, MIN_LAG_SAMPLES, null) })).believed).toBe(false);
    const bound = LAG_FACTOR * 10 + LAG_SLACK_MS;
    expect(settleNotListed(input({ readAt: T0 + 100_000, measured: measured(10, MIN_LAG_SAMPLES, bound + 1) })).believed).toBe(false);
    expect(settleNotListed(input({ readAt: T0 + 100_000, measured: measured(10, MIN_LAG_SAMPLES, bound) })).believed).toBe(true);
  });

  it('an unknown end (a legacy row) leaves only the patience, whatever was measured', () => {
    expect(settleNotListed(input({ endedAt: undefined, readAt: T0 + 100_000, measured: measured(10) })).believed).toBe(false);
  });

  it('a listed class whose add-class began after the end + CLASSROOM_TIMEOUT + SYNC_READ_LAG is a witness', () => {
    const early = ack('early', T0 + 1_000 + LATE + READ_LAG - 1);
    const late = ack('late', T0 + 1_000 + LATE + READ_LAG);
    const readAt = T0 + 60_000;
    expect(settleNotListed(input({ readAt, listed: new Set(['early']), acks: [early] })).believed).toBe(false);
    // An unlisted class is no witness, however late it was sent.
    expect(settleNotListed(input({ readAt, listed: new Set(), acks: [late] })).believed).toBe(false);
    const settled = settleNotListed(input({ readAt, listed: new Set(['late', 'early']), acks: [late, early] }));
    expect(settled).toEqual({
      believed: true,
      evidence: { by: 'witness', witnessClassId: 'late', sentAfterEndMs: LATE + READ_LAG, marginMs: READ_LAG },
    });
  });

  it('a listing that leaves out an acknowledged class older than the margin has no witness and raises the lag bound', () => {
    const readAt = T0 + 80_000;
    const witness = ack('late', T0 + 50_000);
    const missing = ack('missing', T0 + 2_000, T0 + 2_100);
    const stale = settleNotListed(input({ readAt, listed: new Set(['late']), acks: [witness, missing], measured: measured(100) }));
    expect(stale.believed).toBe(false);
    // The same listing with the old class in it is fresh.
    const fresh = settleNotListed(input({ readAt, listed: new Set(['late', 'missing']), acks: [witness, missing], measured: measured(100) }));
    expect(fresh).toMatchObject({ believed: true, evidence: { by: 'measured_lag' } });
  });

  it('a wait reads again no later than the evidence could be in, and never at once', () => {
    const settled = settleNotListed(input({ readAt: T0 + 5_000, measured: measured(100) }));
    if (settled.believed) throw new Error('believed too soon');
    const evidenceAt = T0 + 1_000 + LATE + LAG_FACTOR * 100 + LAG_SLACK_MS;
    expect(settled.retryInMs).toBeGreaterThan(0);
    expect(T0 + 5_000 + settled.retryInMs).toBeLessThanOrEqual(evidenceAt + 50);
  });

  it('reads a listing seen lagging no sooner than it could show the class, and still by the evidence', () => {
    // The listing leaves out a class acknowledged 20 s before it was read: ours, sent at T0, is not
    // likely to show before T0 + 20 s, so the next read is then, not in a second.
    const acks = [ack('older', T0 - 15_000)];
    const settled = settleNotListed(input({ readAt: T0 + 5_000, acks, measured: undefined }));
    if (settled.believed) throw new Error('believed too soon');
    expect(settled.retryInMs).toBeGreaterThanOrEqual(20_000 - 5_000 - 50);
    // With the evidence due sooner than that, it reads when the evidence is due.
    const due = settleNotListed(input({ readAt: T0 + 5_000, acks, measured: measured(100, MIN_LAG_SAMPLES, 0) }));
    if (due.believed) throw new Error('believed too soon');
    expect(T0 + 5_000 + due.retryInMs).toBeLessThanOrEqual(T0 + 1_000 + LATE + LAG_FACTOR * 20_000 + LAG_SLACK_MS + 50);
  });
});
