// Telling a 403 about the key from a 403 about one batch: a harmless read with the same key, shared by
// the jobs refused together, but never one sent before their refusal (its answer says nothing about it).
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createClassroomClient } from '../../src/classroom/client.ts';
import { RejectedError } from '../../src/classroom/errors.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createCredentialsBreaker } from '../../src/ratelimit/breaker.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { createCredentialsGuard } from '../../src/sync/credentials.ts';
import { REDIS_URL } from '../helpers/harness.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const sandbox = useSandbox();
const redis = createRedis(REDIS_URL, 'worker');
afterAll(async () => {
  await redis.quit();
});
const config = loadConfig({});
const forbidden = new RejectedError('addClass failed with HTTP 403: refused', { operation: 'addClass', httpStatus: 403 });

function guard() {
  const breaker = createCredentialsBreaker(redis, `cs-test-guard-${randomBytes(4).toString('hex')}`);
  const g = createCredentialsGuard({
    breaker,
    probeClient: createClassroomClient({ ...config.classroom, baseUrl: sandbox.url }),
    instituteId: config.classroom.instituteId,
    logger: createLogger({ level: 'silent' }),
    probeEveryMs: 60_000,
  });
  return { guard: g, breaker };
}
const listings = () => sandbox.state().calls.byOperation.listClasses?.calls ?? 0;

describe('confirming a 403', () => {
  it('does not take an answer from before the refusal: a key refused a moment after a probe worked is the key', async () => {
    const { guard: g, breaker } = guard();
    try {
      expect(await g.confirmForbidden(forbidden)).toBe('batch');
      // Within the two seconds a probe's answer is shared, the key is refused.
      sandbox.faults.set({ refuseKey: { status: 403 } });
      expect(await g.confirmForbidden(forbidden)).toBe('key');
      expect(await breaker.state()).toMatchObject({ status: 403 });
      expect(listings()).toBe(2);
    } finally {
      g.close();
    }
  });

  it('shares a probe among the jobs refused together: at most the one in flight and the next', async () => {
    const { guard: g } = guard();
    try {
      sandbox.faults.set({ refuseKey: { status: 403 }, latencyMs: 100 });
      const verdicts = await Promise.all(Array.from({ length: 8 }, () => g.confirmForbidden(forbidden)));
      expect(verdicts).toEqual(Array(8).fill('key'));
      expect(listings()).toBeLessThanOrEqual(2);
      // Refused after those probes were sent: a new one, shared again.
      const later = await Promise.all(Array.from({ length: 4 }, () => g.confirmForbidden(forbidden)));
      expect(later).toEqual(Array(4).fill('key'));
      expect(listings()).toBeLessThanOrEqual(3);
    } finally {
      g.close();
    }
  });
});
