// The dashboard's session cookie over real HTTP: it cannot be made from a clients file that holds
// only token digests; a fleet sharing a queue prefix (and so the secret generated in Redis) accepts
// each other's cookies; a new DASHBOARD_SESSION_SECRET, or the stored secret deleted, ends them.
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { tokenDigest } from '../../src/access/tokens.ts';
import { SESSION_COOKIE } from '../../src/http/dashboard-session.ts';
import { sessionSecretKey } from '../../src/http/session-secret.ts';
import { writeClientsFile } from '../helpers/clients.ts';
import { dropQueueKeys } from '../helpers/harness.ts';
import { type LoneServer, basic, call, startLoneServer } from './http-helpers.ts';

// The admin is in the file by its token's SHA-256 alone: "so the file holds no token".
const clientsFile = writeClientsFile([{ name: 'root', role: 'admin', hashed: true }]);
const ROOT = clientsFile.tokens.root!;
const prefix = `cs-test-session-${randomBytes(4).toString('hex')}`;
const servers: LoneServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  await dropQueueKeys(prefix);
  clientsFile.remove();
});

/** A server of the fleet: the file's clients, the shared queue prefix, and `env` over them. */
async function fleetServer(env: Record<string, string> = {}): Promise<LoneServer> {
  const server = await startLoneServer({ API_CLIENTS_FILE: clientsFile.path, QUEUE_PREFIX: prefix, ...env });
  servers.push(server);
  return server;
}

/** Signs in with Basic, as a browser does, and returns the session cookie the page came with. */
async function signIn(server: LoneServer): Promise<string> {
  const page = await call(`${server.url}/admin/queues`, { headers: basic('me', ROOT) });
  expect(page.status).toBe(200);
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0]!;
  expect(cookie).toMatch(new RegExp(`^${SESSION_COOKIE}=root\\.`));
  return cookie;
}

const dashboardWith = async (server: LoneServer, cookie: string) => (await call(`${server.url}/admin/queues/api/queues`, { headers: { cookie } })).status;

describe('dashboard sessions', () => {
  it("refuses a cookie forged from a token's SHA-256, which is all the clients file holds", async () => {
    const server = await fleetServer();
    const expires = String(Math.floor(Date.now() / 1000) + 3600);
    const digest = tokenDigest(ROOT);
    for (const signed of [`dashboard-session:root:${expires}`, `dashboard-session:root:${expires}:${digest}`]) {
      const forged = `${SESSION_COOKIE}=root.${expires}.${createHmac('sha256', digest).update(signed).digest('base64url')}`;
      const answer = await call(`${server.url}/admin/queues`, { headers: { cookie: forged } });
      expect(answer.status, signed).toBe(401);
    }
    // A cookie the server issued itself is good.
    expect(await dashboardWith(server, await signIn(server))).toBe(200);
  });

  it("lets every worker sharing the queue prefix accept each other's cookies; a new secret, or the stored one deleted, ends them", async () => {
    const first = await fleetServer();
    const cookie = await signIn(first);
    const second = await fleetServer();
    expect(await dashboardWith(second, cookie)).toBe(200);

    // DASHBOARD_SESSION_SECRET set: the generated secret's cookies end; its own are good fleet-wide.
    const secret = randomBytes(32).toString('hex');
    const configured = await fleetServer({ DASHBOARD_SESSION_SECRET: secret });
    expect(await dashboardWith(configured, cookie)).toBe(401);
    const configuredCookie = await signIn(configured);
    expect(await dashboardWith(await fleetServer({ DASHBOARD_SESSION_SECRET: secret }), configuredCookie)).toBe(200);
    expect(await dashboardWith(await fleetServer({ DASHBOARD_SESSION_SECRET: randomBytes(32).toString('hex') }), configuredCookie)).toBe(401);

    // The stored secret deleted: a worker started afterwards generates another one.
    await first.runtime.redis.del(sessionSecretKey(prefix));
    const restarted = await fleetServer();
    expect(await dashboardWith(restarted, cookie)).toBe(401);
    expect(await dashboardWith(restarted, await signIn(restarted))).toBe(200);
  });
});
