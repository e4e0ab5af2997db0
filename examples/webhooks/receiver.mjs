// A webhook receiver for classroom-sync: verifies each message with the Standard Webhooks reference
// library and prints it as one JSON line on stdout. Plain Node.js (20 or later), no framework.
//
//   npm install standardwebhooks
//   WEBHOOK_SECRET=whsec_... PORT=8080 node receiver.mjs
//
// WEBHOOK_SECRET is the endpoint's secret (`whsec_` + base64), the same value classroom-sync has
// in WEBHOOK_SECRET or the account's webhookSecret. During a rotation, give this receiver either one.
import { createServer } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  console.error('set WEBHOOK_SECRET to the endpoint secret (whsec_...)');
  process.exit(2);
}
const webhook = new Webhook(secret);
const port = Number(process.env.PORT ?? 8080);
const MAX_BODY_BYTES = 1024 * 1024;

// A message can come more than once (at least once delivery): remember recent ids and act on each
// id once. A real receiver records the id in its database, in the transaction that acts on it.
const seen = new Set();
function firstTime(id) {
  if (seen.has(id)) return false;
  seen.add(id);
  if (seen.size > 10_000) seen.delete(seen.values().next().value);
  return true;
}

const server = createServer(async (req, res) => {
  if (req.method !== 'POST') return res.writeHead(405, { allow: 'POST' }).end();
  // The signature covers the exact bytes sent: verify the raw body, never a re-serialised one.
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return res.writeHead(413).end();
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks).toString('utf8');
  let message;
  try {
    // Checks webhook-id, webhook-timestamp (within 5 minutes of this clock) and webhook-signature.
    message = webhook.verify(body, req.headers);
  } catch (error) {
    const reason = error instanceof WebhookVerificationError ? error.message : 'not a valid message';
    console.error(`rejected a request: ${reason}`);
    return res.writeHead(400, { 'content-type': 'text/plain' }).end(`${reason}\n`);
  }
  const id = req.headers['webhook-id'];
  if (firstTime(id)) {
    // Act on the message here. Answer 2xx only once it is safely handled: any 5xx (or no answer)
    // makes classroom-sync send it again later, under the same webhook-id.
    console.log(JSON.stringify({ id, type: message.type, timestamp: message.timestamp, data: message.data }));
  }
  res.writeHead(204).end();
});

server.listen(port, () => console.error(`listening on port ${server.address().port}`));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
