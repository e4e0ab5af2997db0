// The sweep and the pruning each keep a schedule of their own (src/sync/housekeeping.ts): a sweep
// that fails every time, or hangs, never stops the pruning. Timed by a clock the test moves by hand.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.ts';
import { repeatTasks } from '../../src/sync/housekeeping.ts';
import { manualClock } from '../helpers/clock.ts';

const EVERY = 1_000;

function recordingLogger(lines: string[]) {
  return createLogger({ level: 'warn', destination: { write: (line: string) => void lines.push(JSON.parse(line).msg) } });
}

describe('repeatTasks', () => {
  it('prunes every period while the sweep fails every time, and logs each failed sweep', async () => {
    const clock = manualClock();
    const lines: string[] = [];
    const sweeps: number[] = [];
    const prunes: number[] = [];
    const stop = repeatTasks(
      [
        {
          run: async () => {
            sweeps.push(clock.now());
            throw new Error('redis is down');
          },
          failure: 'sweep failed; will try again',
        },
        { run: async () => prunes.push(clock.now()), failure: 'pruning failed' },
      ],
      { everyMs: EVERY, logger: recordingLogger(lines), clock },
    );
    await clock.advance(3 * EVERY);
    expect(sweeps).toEqual([1_000, 2_000, 3_000]);
    expect(prunes).toEqual([1_000, 2_000, 3_000]);
    expect(lines).toEqual(['sweep failed; will try again', 'sweep failed; will try again', 'sweep failed; will try again']);
    stop();
    await clock.advance(3 * EVERY);
    expect(prunes).toHaveLength(3);
    expect(clock.pending()).toBe(0);
  });

  it('a sweep that never ends holds back neither the pruning nor a second sweep of its own', async () => {
    const clock = manualClock();
    let sweeps = 0;
    const prunes: number[] = [];
    const stop = repeatTasks(
      [
        {
          run: () => {
            sweeps += 1;
            return new Promise(() => {});
          },
          failure: 'sweep failed',
        },
        { run: async () => prunes.push(clock.now()), failure: 'pruning failed' },
      ],
      { everyMs: EVERY, logger: createLogger({ level: 'silent' }), clock },
    );
    await clock.advance(4 * EVERY);
    expect(prunes).toEqual([1_000, 2_000, 3_000, 4_000]);
    expect(sweeps).toBe(1);
    stop();
  });

  it('a run that takes part of the period keeps the next on schedule', async () => {
    const clock = manualClock();
    const starts: number[] = [];
    const stop = repeatTasks(
      [
        {
          run: async () => {
            starts.push(clock.now());
            await clock.sleep(300);
          },
          failure: 'failed',
        },
      ],
      { everyMs: EVERY, logger: createLogger({ level: 'silent' }), clock },
    );
    await clock.advance(3 * EVERY);
    expect(starts).toEqual([1_000, 2_000, 3_000]);
    stop();
  });
});
