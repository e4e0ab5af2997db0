// Least privilege over real HTTP: each API client reaches the routes of its role and the batches of
// its institutes; a batch outside them reads as one that does not exist; guessing tokens is throttled
// per source address (TRUST_PROXY names the proxy whose X-Forwarded-For to believe).
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_FAILURES } from '../../src/http/auth-throttle.ts';
import { writeAccountsFile } from '../helpers/accounts.ts';
import { rowsOf, untilAllSynced } from '../helpers/batches.ts';
import { type TestClient, writeClientsFile } from '../helpers/clients.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { basic, call, startTestWorker, useTestWorker } from './http-helpers.ts';

const NORTH = 'inst-north';
const SOUTH = 'inst-south';
const CLIENTS: TestClient[] = [
  { name: 'north-lms', role: 'publisher', instituteIds: [NORTH] },
  { name: 'north-reports', role: 'reader', instituteIds: [NORTH], hashed: true },
  { name: 'ops-desk', role: 'operator' },
  { name: 'root', role: 'admin' },
];
const accountsFile = writeAccountsFile([{ name: 'north' }, { name: 'south' }]);
const clientsFile = writeClientsFile(CLIENTS);
afterAll(() => {
  accountsFile.remove();
  clientsFile.remove();
});
const scope = useHarnessWithWorker({ env: { CLASSROOM_ACCOUNTS_FILE: accountsFile.path } });
// API_TOKEN stays set (http-helpers): it is one more admin client beside the file's.
const w = useTestWorker(scope, { API_CLIENTS_FILE: clientsFile.path, TRUST_PROXY: '127.0.0.1' });
const bearer = (name: string) => ({ authorization: `Bearer ${clientsFile.tokens[name]}` });
// Each test speaks from an address of its own, so one test's failed sign-ins never throttle another's.
let nextAddress = 10;
const from = () => ({ 'x-forwarded-for': `198.51.100.${nextAddress++}` });

async function seed(): Promise<void> {
  await publishBatches(publishDepsOf(scope.h), [
    { batchId: 'n-1', name: 'North one', subject: 'Maths', instituteId: NORTH },
    { batchId: 's-1', name: 'South one', subject: 'Maths', instituteId: SOUTH },
    { batchId: 'both-1', name: 'North both', subject: 'Art', instituteId: NORTH },
    { batchId: 'both-1', name: 'South both', subject: 'Art', instituteId: SOUTH },
  ]);
  await untilAllSynced(scope.h, { count: 4 }, 30_000);
}

describe('who may do what', () => {
  it('each role reaches exactly its routes: publish, read one, list, dashboard view, dashboard action', async () => {
    await seed();
    const expected: Record<string, [number, number, number, number, number]> = {
      'north-lms': [202, 200, 200, 403, 403],
      'north-reports': [403, 200, 200, 403, 403],
      'ops-desk': [403, 200, 200, 200, 403],
      root: [202, 200, 200, 200, 200],
    };
    for (const [name, want] of Object.entries(expected)) {
      const headers = { ...bearer(name), ...from() };
      const got = [
        (
          await call(`${w.url}/v1/batches`, {
            method: 'POST',
            headers,
            json: { batchId: `by-${name}`, name: `By ${name}`, subject: 'Maths', instituteId: NORTH },
          })
        ).status,
        (await call(`${w.url}/v1/batches/n-1?instituteId=${NORTH}`, { headers })).status,
        (await call(`${w.url}/v1/batches`, { headers })).status,
        (await call(`${w.url}/admin/queues/api/queues`, { headers })).status,
        (await call(`${w.url}/admin/queues/api/queues/batch-sync/clean/completed`, { method: 'PUT', headers })).status,
      ];
      expect(got, name).toEqual(want);
    }
    // Nothing was recorded for the roles that may not publish.
    const ids = (await rowsOf(scope.h)).map((r) => r.batchId);
    expect(ids).toEqual(expect.arrayContaining(['by-north-lms', 'by-root']));
    expect(ids).not.toContain('by-north-reports');
    expect(ids).not.toContain('by-ops-desk');

    const refused = await call(`${w.url}/admin/queues/api/queues`, { headers: { ...bearer('north-reports'), ...from() } });
    expect(refused.body.message).toBe('client "north-reports" (role reader) may not open the dashboard: that needs the operator or admin role');
    const noAuth = await call(`${w.url}/v1/batches`, { headers: from() });
    expect(noAuth.status).toBe(401);
  });

  it('keeps a client to its institutes: publishing outside is refused by name and records nothing; reading outside looks like nothing is there', async () => {
    const headers = { ...bearer('north-lms'), ...from() };
    const mixed = await call(`${w.url}/v1/batches`, {
      method: 'POST',
      headers,
      json: [
        { batchId: 'scope-n', name: 'Scoped north', subject: 'Maths', instituteId: NORTH },
        { batchId: 'scope-s', name: 'Scoped south', subject: 'Maths', instituteId: SOUTH },
      ],
    });
    expect(mixed.status).toBe(403);
    expect(mixed.body).toMatchObject({ error: 'forbidden', institutes: [SOUTH] });
    expect(mixed.body.message).toMatch(/^client "north-lms" may not publish for institute inst-south; nothing was accepted/);
    expect((await rowsOf(scope.h)).filter((r) => r.batchId.startsWith('scope-'))).toEqual([]);

    const south = await call(`${w.url}/v1/batches/s-1?instituteId=${SOUTH}`, { headers });
    const unknown = await call(`${w.url}/v1/batches/never-1?instituteId=${SOUTH}`, { headers });
    expect(south.status).toBe(404);
    expect(south.body.message).toBe(`batch s-1 of institute ${SOUTH} is not known`);
    expect(unknown.body.message).toBe(`batch never-1 of institute ${SOUTH} is not known`);
    expect((await call(`${w.url}/v1/batches/s-1/events?instituteId=${SOUTH}`, { headers })).status).toBe(404);
    // Asked under its own institute, the hint names no institute outside the client's.
    const hintless = await call(`${w.url}/v1/batches/s-1?instituteId=${NORTH}`, { headers });
    expect(hintless.body.message).toBe(`batch s-1 of institute ${NORTH} is not known`);
    const admin = await call(`${w.url}/v1/batches/s-1?instituteId=${NORTH}`, { headers: { ...bearer('root'), ...from() } });
    expect(admin.body.message).toMatch(/it is known under institute inst-south/);

    const listed = await call(`${w.url}/v1/batches?limit=500`, { headers });
    expect(new Set(listed.body.items.map((b: { instituteId: string }) => b.instituteId))).toEqual(new Set([NORTH]));
    expect((await call(`${w.url}/v1/batches?instituteId=${SOUTH}`, { headers })).body).toEqual({ items: [], nextCursor: null });
    const operator = await call(`${w.url}/v1/batches?limit=500`, { headers: { ...bearer('ops-desk'), ...from() } });
    expect(new Set(operator.body.items.map((b: { instituteId: string }) => b.instituteId))).toEqual(new Set([NORTH, SOUTH]));
  });

  it("gives an operator Bull Board's read-only mode, an admin all of it", async () => {
    const queuesAs = async (name: string) =>
      (await call(`${w.url}/admin/queues/api/queues`, { headers: { ...bearer(name), ...from() } })).body.queues as {
        readOnlyMode: boolean;
        allowRetries: boolean;
      }[];
    const operator = await queuesAs('ops-desk');
    expect(operator.length).toBeGreaterThan(0);
    for (const queue of operator) expect(queue).toMatchObject({ readOnlyMode: true, allowRetries: false });
    for (const queue of await queuesAs('root')) expect(queue).toMatchObject({ readOnlyMode: false, allowRetries: true });
    // Signed in with Basic, the session cookie keeps the operator's role.
    const page = await call(`${w.url}/admin/queues`, { headers: { ...basic('me', clientsFile.tokens['ops-desk']!), ...from() } });
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(cookie).toMatch(/^classroom_sync_dashboard=ops-desk\./);
    expect((await call(`${w.url}/admin/queues/api/queues/batch-sync/pause`, { method: 'PUT', headers: { cookie, ...from() } })).status).toBe(403);
  });

  it('marks the session cookie Secure when the trusted proxy says the original request was https', async () => {
    const signIn = (proto: string) =>
      call(`${w.url}/admin/queues`, { headers: { ...basic('me', clientsFile.tokens.root!), 'x-forwarded-proto': proto, ...from() } });
    expect((await signIn('https')).headers.get('set-cookie')).toMatch(/; Secure$/);
    expect((await signIn('http')).headers.get('set-cookie')).not.toMatch(/Secure/);
  });
});

describe('/metrics with --metrics-auth', () => {
  it('lets operators and admins scrape; publishers and readers get 403, no token 401', async () => {
    const guarded = await startTestWorker(scope.h, { API_CLIENTS_FILE: clientsFile.path, TRUST_PROXY: '127.0.0.1' }, { metricsAuth: true });
    scope.defer(() => guarded.stop());
    const scrape = async (headers: Record<string, string>) => (await call(`${guarded.url}/metrics`, { headers: { ...headers, ...from() } })).status;
    expect(await scrape({})).toBe(401);
    expect(await scrape(bearer('north-lms'))).toBe(403);
    expect(await scrape(bearer('north-reports'))).toBe(403);
    const refused = await call(`${guarded.url}/metrics`, { headers: { ...bearer('north-reports'), ...from() } });
    expect(refused.body.message).toBe('client "north-reports" (role reader) may not scrape /metrics: that needs the operator or admin role');
    expect(await scrape(bearer('ops-desk'))).toBe(200);
    expect(await scrape(basic('prometheus', clientsFile.tokens.root!))).toBe(200);
  });
});

describe('batch ids on routes', () => {
  it('reads back a batch by the 200-character id intake accepts (any characters, URL-encoded); 201 is a 400 naming batchId', async () => {
    const headers = { ...bearer('root'), ...from() };
    const id = `ü-${'x'.repeat(97)}/${'é'.repeat(100)}`;
    expect(id).toHaveLength(200);
    const posted = await call(`${w.url}/v1/batches`, { method: 'POST', headers, json: { batchId: id, name: 'Long id', subject: 'Maths', instituteId: NORTH } });
    expect(posted.status).toBe(202);
    const one = await call(`${w.url}/v1/batches/${encodeURIComponent(id)}?instituteId=${NORTH}`, { headers });
    expect(one.status).toBe(200);
    expect(one.body.batchId).toBe(id);
    expect((await call(`${w.url}/v1/batches/${encodeURIComponent(id)}/events?instituteId=${NORTH}`, { headers })).status).toBe(200);
    const tooLong = await call(`${w.url}/v1/batches/${encodeURIComponent(`${id}z`)}?instituteId=${NORTH}`, { headers });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.problems).toEqual([{ path: 'batchId', reason: 'must be at most 200 characters' }]);
  });
});

describe('failed sign-ins', () => {
  it(`answer 429 with Retry-After after ${MAX_FAILURES} from one address, on every authenticated route, good token or not; other addresses and successes are unaffected`, async () => {
    const guesser = from();
    for (let i = 0; i < MAX_FAILURES; i++) {
      const guess = await call(`${w.url}/v1/batches`, { headers: { authorization: `Bearer guess-${i}`, ...guesser } });
      expect(guess.status, `guess ${i + 1}`).toBe(401);
    }
    const throttled = await call(`${w.url}/v1/batches`, { headers: { ...bearer('root'), ...guesser } });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(throttled.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect((await call(`${w.url}/admin/queues`, { headers: { ...basic('me', clientsFile.tokens.root!), ...guesser } })).status).toBe(429);
    // Probes and /metrics need no sign-in and stay open.
    expect((await call(`${w.url}/healthz`, { headers: guesser })).status).toBe(200);

    const honest = from();
    for (let i = 0; i < MAX_FAILURES + 5; i++)
      expect((await call(`${w.url}/v1/batches?limit=1`, { headers: { ...bearer('north-reports'), ...honest } })).status).toBe(200);
    expect((await call(`${w.url}/v1/batches`, { headers: { authorization: 'Bearer one-wrong', ...honest } })).status).toBe(401);
    expect((await call(`${w.url}/v1/batches?limit=1`, { headers: { ...bearer('north-reports'), ...honest } })).status).toBe(200);
  });
});
