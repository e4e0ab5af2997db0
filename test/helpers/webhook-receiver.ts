// A real HTTP endpoint for webhook tests: records every request it is sent (headers and raw body) and
// answers as the test says: a status, or no answer at all (a hang). It can start down (`listen` later
// on the port it was given) and go down again (`close`).
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: Record<string, string>;
  body: string;
  /** The body parsed: `{ type, timestamp, data }`. */
  message: { type: string; timestamp: string; data: Record<string, any> };
  at: number;
}

/** What to answer a request: a status, or `hang` (read it, never answer). */
export type Answer = number | 'hang';

export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** Decides each answer (default 200); called with the request and how many times its id came before. */
  answer: (request: Received, seenBefore: number) => Answer;
  listen(): Promise<void>;
  close(): Promise<void>;
  /** Requests per message id. */
  byId(): Map<string, Received[]>;
}

/** A receiver on a free port (`port` 0) or a given one; listening unless `down`. */
export async function startReceiver(options: { port?: number; down?: boolean } = {}): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  let server: Server | undefined;
  let port = options.port ?? 0;
  const receiver: Receiver = {
    get url() {
      return `http://127.0.0.1:${port}/hooks`;
    },
    received,
    answer: () => 200,
    async listen() {
      server = createServer((req, res) => void handle(req, res));
      await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    },
    async close() {
      for (const res of hanging) res.destroy();
      hanging.clear();
      const s = server;
      server = undefined;
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()).closeAllConnections());
    },
    byId() {
      const ids = new Map<string, Received[]>();
      for (const r of received) ids.set(r.headers['webhook-id'] ?? '', [...(ids.get(r.headers['webhook-id'] ?? '') ?? []), r]);
      return ids;
    },
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
    const request: Received = { headers, body, message: JSON.parse(body), at: Date.now() };
    const seenBefore = received.filter((r) => r.headers['webhook-id'] === headers['webhook-id']).length;
    received.push(request);
    const answer = receiver.answer(request, seenBefore);
    if (answer === 'hang') {
      hanging.add(res);
      return;
    }
    res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer < 300 ? 'ok' : 'no');
  }

  if (!options.down) await receiver.listen();
  else if (port === 0) throw new Error('a receiver that starts down needs a port');
  return receiver;
}

/** A fresh Standard Webhooks secret (`whsec_` + base64 of 32 random bytes). */
export function newSecret(): string {
  return `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')}`;
}

/** The reference library's own check: throws unless `request` is signed with `secret`. */
export function verify(secret: string, request: Received): unknown {
  return new Webhook(secret).verify(request.body, request.headers);
}
