// The dashboard's session cookie: names its client, signed with the server's session secret over
// that client's token digest, expires by itself, never holds the token, cannot be made from what
// the clients file holds, and dies with the client, its token or the secret.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createClientDirectory } from '../../src/access/directory.ts';
import { tokenDigest } from '../../src/access/tokens.ts';
import { SESSION_TTL_SECONDS, createDashboardSession } from '../../src/http/dashboard-session.ts';
import type { SessionSecret } from '../../src/http/session-secret.ts';

const TOKEN = 'a-dashboard-token-of-some-length-0123';
const OTHER = 'another-token-entirely-0123456789abcdef';
const secretOf =
  (value: string): SessionSecret =>
  async () =>
    Buffer.from(value);
const SECRET = secretOf('the-server-session-secret-0123456789');
const cookieOf = (setCookie: string | undefined) => (setCookie ?? '').split(';')[0]!;
const directoryOf = (clients: { name: string; token: string; role?: 'operator' | 'admin' }[]) =>
  createClientDirectory(clients.map((c) => ({ name: c.name, role: c.role ?? 'operator', instituteIds: undefined, digest: tokenDigest(c.token) })));

describe('dashboard session cookie', () => {
  it('signs its client in until it expires, and not after', async () => {
    let now = Date.parse('2026-11-23T10:00:00Z');
    const directory = directoryOf([{ name: 'ops.desk', token: TOKEN }]);
    const session = createDashboardSession(directory, SECRET, { now: () => now });
    const client = directory.byToken(TOKEN)!;
    const cookie = cookieOf(await session.issue(client, '/admin/queues', false));
    expect(cookie).not.toContain(TOKEN);
    expect(await session.verify(`other=1; ${cookie}`)).toMatchObject({ name: 'ops.desk', role: 'operator' });
    now += (SESSION_TTL_SECONDS - 1) * 1000;
    expect((await session.verify(cookie))?.name).toBe('ops.desk');
    now += 1000;
    expect(await session.verify(cookie)).toBeUndefined();
  });

  it("is worthless once the client's token changes or the client is gone, cannot be moved to another client, and is Secure only over HTTPS", async () => {
    const before = directoryOf([
      { name: 'ops', token: TOKEN },
      { name: 'root', token: OTHER, role: 'admin' },
    ]);
    const issued = await createDashboardSession(before, SECRET).issue(before.byToken(TOKEN)!, '/admin/queues', true);
    expect(issued).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
    expect((await createDashboardSession(before, SECRET).verify(cookieOf(issued)))?.name).toBe('ops');
    // Renamed to the admin: the signature was made for "ops".
    expect(await createDashboardSession(before, SECRET).verify(cookieOf(issued).replace('=ops.', '=root.'))).toBeUndefined();
    expect(await createDashboardSession(directoryOf([{ name: 'ops', token: OTHER }]), SECRET).verify(cookieOf(issued))).toBeUndefined();
    expect(await createDashboardSession(directoryOf([{ name: 'root', token: OTHER }]), SECRET).verify(cookieOf(issued))).toBeUndefined();
    expect(await createDashboardSession(before, SECRET).verify(undefined)).toBeUndefined();
  });

  it("cannot be made from the token's SHA-256 (all a clients file with tokenSha256 holds), and dies with the secret", async () => {
    const directory = directoryOf([{ name: 'root', token: TOKEN, role: 'admin' }]);
    const session = createDashboardSession(directory, SECRET);
    // The cookie as it used to be made: an HMAC keyed by the token's digest over name and expiry.
    const expires = String(Math.floor(Date.now() / 1000) + 3600);
    const forged = createHmac('sha256', tokenDigest(TOKEN)).update(`dashboard-session:root:${expires}`).digest('base64url');
    expect(await session.verify(`classroom_sync_dashboard=root.${expires}.${forged}`)).toBeUndefined();
    // Nor keyed by the digest over what is signed now.
    const alsoForged = createHmac('sha256', tokenDigest(TOKEN))
      .update(`dashboard-session:root:${expires}:${tokenDigest(TOKEN)}`)
      .digest('base64url');
    expect(await session.verify(`classroom_sync_dashboard=root.${expires}.${alsoForged}`)).toBeUndefined();

    const cookie = cookieOf(await session.issue(directory.byToken(TOKEN)!, '/admin/queues', false));
    expect((await createDashboardSession(directory, secretOf('the-server-session-secret-0123456789')).verify(cookie))?.name).toBe('root');
    expect(await createDashboardSession(directory, secretOf('a-rotated-session-secret-9876543210')).verify(cookie)).toBeUndefined();
  });

  it('issues and accepts nothing while there is no secret (Redis not answering yet)', async () => {
    const directory = directoryOf([{ name: 'ops', token: TOKEN }]);
    const cookie = cookieOf(await createDashboardSession(directory, SECRET).issue(directory.byToken(TOKEN)!, '/admin/queues', false));
    const without = createDashboardSession(directory, async () => undefined);
    expect(await without.issue(directory.byToken(TOKEN)!, '/admin/queues', false)).toBeUndefined();
    expect(await without.verify(cookie)).toBeUndefined();
  });
});
