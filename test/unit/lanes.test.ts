// Lanes as BullMQ priorities: bands in order of precedence, institutes interleaved inside a band.
import { describe, expect, it } from 'vitest';
import { laneOfPriority, priorityOf, queueLaneOf } from '../../src/sync/lanes.ts';

describe('lanes', () => {
  it('a batch under way goes before live, live before operator work, operator work before backfill', () => {
    const far = 400_000;
    expect(priorityOf('under_way')).toBeLessThan(priorityOf('live'));
    expect(priorityOf('live', far)).toBeLessThan(priorityOf('operator'));
    expect(priorityOf('operator', far)).toBeLessThan(priorityOf('backfill'));
    // BullMQ's own limit.
    expect(priorityOf('backfill', 10_000_000)).toBeLessThanOrEqual(2 ** 21);
  });

  it('an earlier place in its institute line is an earlier place in the queue; the band is read back', () => {
    expect(priorityOf('backfill', 0)).toBeLessThan(priorityOf('backfill', 1));
    for (const lane of ['under_way', 'live', 'operator', 'backfill'] as const) {
      for (const position of [0, 7, 1_000_000]) expect(laneOfPriority(priorityOf(lane, position))).toBe(lane);
    }
    // A job with no priority was queued by hand (classroom-sync always sets one): shown in live, the lane a batch is received in.
    expect(laneOfPriority(undefined)).toBe('live');
    expect(laneOfPriority(0)).toBe('live');
  });

  it('a batch whose add-class was sent is under way, whatever its lane', () => {
    expect(queueLaneOf('backfill', 'creating')).toBe('under_way');
    expect(queueLaneOf('backfill', 'link_enabled')).toBe('under_way');
    expect(queueLaneOf('backfill', 'pending')).toBe('backfill');
    expect(queueLaneOf('live', 'pending')).toBe('live');
  });
});
