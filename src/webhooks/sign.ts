// Standard Webhooks v1: `webhook-id`, `webhook-timestamp` (this attempt's time, in seconds) and
// `webhook-signature`, one `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret, separated by
// spaces; the key is the secret's base64 after `whsec_`. Signed with node:crypto rather than the
// reference library, whose pure-JavaScript SHA-256 was most of a delivery's CPU (bench:webhooks);
// test/unit/webhooks.test.ts checks every signature against the library's own, and the receivers in
// the tests verify with it.
import { createHmac } from 'node:crypto';

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

const PREFIX = 'whsec_';
/** Each secret's key, decoded once: a worker has a handful of secrets and signs with them all day. */
const keys = new Map<string, Buffer>();

function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
    keys.set(secret, key);
  }
  return key;
}

export function signMessage(secrets: readonly string[], messageId: string, body: string, at: Date = new Date()): SignedHeaders {
  // The timestamp is signed in whole seconds; the header must carry exactly that number.
  const seconds = String(Math.floor(at.getTime() / 1_000));
  const signed = `${messageId}.${seconds}.${body}`;
  const signatures = secrets.map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`);
  return { 'webhook-id': messageId, 'webhook-timestamp': seconds, 'webhook-signature': signatures.join(' ') };
}
