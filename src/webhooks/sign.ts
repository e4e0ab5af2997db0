// Standard Webhooks v1: `webhook-id`, `webhook-timestamp` (this attempt's time, in seconds) and
// `webhook-signature`, one `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret, separated by
// spaces. Signed with the reference library itself, so a receiver's `verify` agrees by construction.
import { Webhook } from 'standardwebhooks';

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export function signMessage(secrets: readonly string[], messageId: string, body: string, at: Date = new Date()): SignedHeaders {
  // The timestamp is signed in whole seconds; the header must carry exactly that number.
  const seconds = Math.floor(at.getTime() / 1_000);
  const when = new Date(seconds * 1_000);
  const signatures = secrets.map((secret) => new Webhook(secret).sign(messageId, when, body));
  return { 'webhook-id': messageId, 'webhook-timestamp': String(seconds), 'webhook-signature': signatures.join(' ') };
}
