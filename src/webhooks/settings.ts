// Where a message goes and how it is signed, and how each field is checked. The environment
// (WEBHOOK_URL, WEBHOOK_SECRET) and the accounts file (webhookUrl, webhookSecret) share these rules.
// No message ever repeats a value: a secret in a mistyped field never reaches a terminal or a log.
import { z } from 'zod';

export interface WebhookEndpoint {
  url: string;
  /** Every secret signs every message (Standard Webhooks allows several signatures): rotation without a gap. */
  secrets: readonly string[];
}

export interface WebhookSettings {
  /** WEBHOOK_URL with WEBHOOK_SECRET: where messages of institutes whose account has no endpoint of its own go. */
  endpoint: WebhookEndpoint | undefined;
  timeoutMs: number;
  concurrency: number;
  /** The waits after the 1st, 2nd, … failed attempt; the last one repeats. */
  retryScheduleMs: readonly number[];
  /** No attempt is made later than this after a message was written (or redelivered). */
  retryForMs: number;
}

/** The Standard Webhooks schedule after the first attempt: 5 s, 5 min, 30 min, 2 h, 5 h, then every 10 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000] as const;

const MIN_SECRET_BYTES = 24;

function secretProblem(secret: string): string | undefined {
  if (!secret.startsWith('whsec_')) return 'must start with "whsec_"';
  const encoded = secret.slice('whsec_'.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return 'must be "whsec_" followed by base64';
  if (Buffer.from(encoded, 'base64').length < MIN_SECRET_BYTES) return `must encode at least ${MIN_SECRET_BYTES} random bytes`;
  return undefined;
}

export const webhookFields = {
  url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  /** One secret, or several separated by spaces; each `whsec_` + base64 of at least 24 bytes. */
  secrets: z.string({ error: 'must be a string' }).transform((text, ctx) => {
    const secrets = text.split(/\s+/).filter((s) => s.length > 0);
    if (secrets.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'must hold at least one secret' });
      return z.NEVER;
    }
    for (const [i, secret] of secrets.entries()) {
      const problem = secretProblem(secret);
      if (problem) {
        ctx.addIssue({ code: 'custom', message: secrets.length > 1 ? `secret ${i + 1} of ${secrets.length} ${problem}` : problem });
        return z.NEVER;
      }
    }
    return secrets;
  }),
};

/** The WEBHOOK_* values as read; a URL and a secret come together or not at all. */
export interface WebhookInput extends Omit<WebhookSettings, 'endpoint'> {
  url: string | undefined;
  secrets: readonly string[] | undefined;
}

/**
 * A URL and its secrets come together or not at all (messages are always signed): the one missing,
 * named as the caller names the two (`WEBHOOK_URL`/`WEBHOOK_SECRET`, `webhookUrl`/`webhookSecret`).
 */
export function unpaired(url: unknown, secrets: unknown, names: { url: string; secrets: string }): { field: string; reason: string } | undefined {
  if ((url === undefined) === (secrets === undefined)) return undefined;
  const [field, other] = url === undefined ? [names.url, names.secrets] : [names.secrets, names.url];
  return { field, reason: `must be set when ${other} is (messages are always signed)` };
}

export function webhookSettingsOf(input: WebhookInput): { ok: true; settings: WebhookSettings } | { ok: false; problem: { variable: string; reason: string } } {
  const { url, secrets, ...delivery } = input;
  const missing = unpaired(url, secrets, { url: 'WEBHOOK_URL', secrets: 'WEBHOOK_SECRET' });
  if (missing) return { ok: false, problem: { variable: missing.field, reason: missing.reason } };
  return { ok: true, settings: { endpoint: url && secrets ? { url, secrets } : undefined, ...delivery } };
}
