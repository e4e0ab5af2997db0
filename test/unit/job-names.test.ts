// A job's name (what the queue dashboard lists) is cut to 200 UTF-16 units, never between the two
// halves of a character outside the BMP: half an emoji is a lone surrogate, which is not valid
// UTF-8 and comes out of Redis and JSON as U+FFFD.
import { describe, expect, it } from 'vitest';
import { JOB_NAME_MAX, jobName, syncJob } from '../../src/sync/queue.ts';

const EMOJI = '🎓'; // two UTF-16 units
/** True when the text has no lone surrogate (it survives UTF-8 unchanged). */
const wellFormed = (text: string) => Buffer.from(text, 'utf8').toString('utf8') === text;

describe('job names', () => {
  it('keeps a name of up to 200 units whole', () => {
    const name = 'x'.repeat(JOB_NAME_MAX - 2) + EMOJI;
    expect(name.length).toBe(JOB_NAME_MAX);
    expect(jobName(name)).toBe(name);
  });

  it('cuts before a character whose two halves would straddle the 200th unit, never between them', () => {
    const name = `${'x'.repeat(JOB_NAME_MAX - 1)}${EMOJI}tail`;
    const cut = jobName(name);
    expect(cut).toBe('x'.repeat(JOB_NAME_MAX - 1));
    expect(wellFormed(cut)).toBe(true);
    // Ending exactly on the character's second half keeps it.
    expect(jobName(`${'x'.repeat(JOB_NAME_MAX - 2)}${EMOJI}tail`)).toBe(`${'x'.repeat(JOB_NAME_MAX - 2)}${EMOJI}`);
  });

  it('gives a batch whose id is emoji a well-formed name of at most 200 units, wherever the cut falls', () => {
    for (let pad = 0; pad < 4; pad++) {
      const { name } = syncJob({ instituteId: `inst-${'n'.repeat(pad)}`, batchId: EMOJI.repeat(100) }, { lane: 'live' });
      expect(name.length, `pad ${pad}`).toBeLessThanOrEqual(200);
      expect(name.length, `pad ${pad}`).toBeGreaterThanOrEqual(199);
      expect(wellFormed(name), `pad ${pad}`).toBe(true);
    }
  });
});
