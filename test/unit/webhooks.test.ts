import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { verdictOf } from '../../src/webhooks/outcome.ts';
import { endpointRouter, routedInstitutes } from '../../src/webhooks/routing.ts';
import { parseRetryAfter, retryDelayMs } from '../../src/webhooks/schedule.ts';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../../src/webhooks/settings.ts';
import { signMessage } from '../../src/webhooks/sign.ts';

const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const settings = { retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS, retryForMs: 3 * 86_400_000 };

describe('webhook signing', () => {
  it("the reference library verifies every secret's signature; the timestamp header is the signed one", () => {
    const other = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    const body = JSON.stringify({ type: 'batch.synced', timestamp: new Date().toISOString(), data: { batchId: 'b' } });
    const headers = signMessage([secret, other], 'msg_1', body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ type: 'batch.synced' });
    expect(new Webhook(other).verify(body, headers)).toMatchObject({ data: { batchId: 'b' } });
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
  });

  it("signs exactly as the reference library's own sign(), for any secret, id, body and time", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 24, maxLength: 64 }),
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.string({ unit: 'binary', maxLength: 400 }),
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        (bytes, messageId, body, ms) => {
          const key = `whsec_${Buffer.from(bytes).toString('base64')}`;
          const at = new Date(ms);
          const headers = signMessage([key], messageId, body, at);
          const reference = new Webhook(key).sign(messageId, new Date(Math.floor(ms / 1_000) * 1_000), body);
          expect(headers['webhook-signature']).toBe(reference);
          expect(headers['webhook-timestamp']).toBe(String(Math.floor(ms / 1_000)));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('webhook retry schedule', () => {
  it('follows the Standard Webhooks schedule after each failure, the last wait repeating, within ±10%', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7, 8].map((attempt) => retryDelayMs(DEFAULT_RETRY_SCHEDULE_MS, attempt, undefined, () => 0.5));
    expect(waits).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000, 36_000_000]);
    expect(retryDelayMs(DEFAULT_RETRY_SCHEDULE_MS, 1, undefined, () => 0)).toBe(4_500);
    expect(retryDelayMs(DEFAULT_RETRY_SCHEDULE_MS, 1, undefined, () => 1)).toBe(5_500);
  });

  it("waits at least an endpoint's Retry-After, in seconds or as a date, and at most 10 h for it", () => {
    expect(retryDelayMs([1_000], 1, parseRetryAfter('120'), () => 0.5)).toBe(120_000);
    // A date counts from the clock it is given: a minute after now is a minute's wait, a past date none.
    const now = { now: () => Date.parse('2026-11-25T10:00:00Z') };
    expect(parseRetryAfter('Wed, 25 Nov 2026 10:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wed, 25 Nov 2026 09:59:00 GMT', now)).toBe(0);
    expect(verdictOf({ status: 503, retryAfter: 'Wed, 25 Nov 2026 11:00:00 GMT' }, 1, settings, now)).toMatchObject({ outcome: 'retry', delayMs: 3_600_000 });
    expect(retryDelayMs([1_000], 1, 999 * 3_600_000, () => 0.5)).toBe(10 * 3_600_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});

describe('what an answer means', () => {
  it('2xx delivers; 408, 429, 3xx, 5xx and no answer retry; any other 4xx gives the message up', () => {
    expect(verdictOf({ status: 204 }, 1, settings).outcome).toBe('delivered');
    for (const status of [408, 429, 301, 302, 500, 502, 503]) expect(verdictOf({ status }, 1, settings).outcome, String(status)).toBe('retry');
    expect(verdictOf({ status: undefined, error: 'timeout after 5000 ms' }, 1, settings)).toMatchObject({
      outcome: 'retry',
      status: null,
      error: 'timeout after 5000 ms',
    });
    for (const status of [400, 401, 404, 410, 413]) expect(verdictOf({ status }, 1, settings).outcome, String(status)).toBe('given_up');
  });
});

describe('webhook settings', () => {
  const problem = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems.map((p) => `${p.variable}: ${p.reason}`).join('; ');
    }
    return 'loaded';
  };

  it('a URL needs a secret and a secret a URL; each secret is whsec_ + base64 of 24+ bytes; no message repeats the value', () => {
    expect(problem({ WEBHOOK_URL: 'https://example.test/hooks' })).toBe('WEBHOOK_SECRET: must be set when WEBHOOK_URL is (messages are always signed)');
    expect(problem({ WEBHOOK_SECRET: secret })).toBe('WEBHOOK_URL: must be set when WEBHOOK_SECRET is (messages are always signed)');
    const short = `whsec_${Buffer.alloc(16, 1).toString('base64')}`;
    expect(problem({ WEBHOOK_URL: 'https://example.test/hooks', WEBHOOK_SECRET: short })).toBe('WEBHOOK_SECRET: must encode at least 24 random bytes');
    const raw = 'not-a-whsec-value-0123456789';
    const said = problem({ WEBHOOK_URL: 'https://example.test/hooks', WEBHOOK_SECRET: `${secret} ${raw}` });
    expect(said).toBe('WEBHOOK_SECRET: secret 2 of 2 must start with "whsec_"');
    expect(said).not.toContain(raw);
    const config = loadConfig({
      WEBHOOK_URL: 'https://example.test/hooks',
      WEBHOOK_SECRET: ` ${secret}  ${secret.replace('Bw', 'Cw')} `,
      WEBHOOK_RETRY_SCHEDULE: '1s,2s',
    });
    expect(config.webhooks.endpoint?.secrets).toHaveLength(2);
    expect(config.webhooks.retryScheduleMs).toEqual([1_000, 2_000]);
    expect(problem({ WEBHOOK_RETRY_SCHEDULE: '1s,soon' })).toMatch(/^WEBHOOK_RETRY_SCHEDULE: must be durations separated by commas/);
  });

  it("an institute's messages go to its account's endpoint, else to WEBHOOK_URL, else nowhere", () => {
    const own = { url: 'https://north.test/hooks', secrets: [secret] };
    const fallback = { url: 'https://all.test/hooks', secrets: [secret] };
    const route = endpointRouter([{ instituteIds: ['n1', 'n2'], webhook: own }, { instituteIds: ['s1'] }], fallback);
    expect(route('n2')).toBe(own);
    expect(route('s1')).toBe(fallback);
    expect(route('unknown')).toBe(fallback);
    expect(endpointRouter([{ instituteIds: ['s1'] }], undefined)('s1')).toBeUndefined();
    // What is skipped in bulk: nothing with WEBHOOK_URL; else every institute but the routed ones.
    expect(routedInstitutes([{ instituteIds: ['n1'], webhook: own }], fallback)).toBeUndefined();
    expect(routedInstitutes([{ instituteIds: ['n1', 'n2'], webhook: own }, { instituteIds: ['s1'] }], undefined)).toEqual(['n1', 'n2']);
    expect(routedInstitutes([{ instituteIds: ['d'], anyInstitute: true }], undefined)).toEqual([]);
  });
});
