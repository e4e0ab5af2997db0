// The dashboard's session cookie: names its client, signed by that client's token, expires by
// itself, never holds the token, and dies with the client or its token.
import { describe, expect, it } from 'vitest';
import { createClientDirectory } from '../../src/access/directory.ts';
import { tokenDigest } from '../../src/access/tokens.ts';
import { SESSION_TTL_SECONDS, createDashboardSession } from '../../src/http/dashboard-session.ts';

const TOKEN = 'a-dashboard-token-of-some-length-0123';
const OTHER = 'another-token-entirely-0123456789abcdef';
const cookieOf = (setCookie: string) => setCookie.split(';')[0]!;
const directoryOf = (clients: { name: string; token: string; role?: 'operator' | 'admin' }[]) =>
  createClientDirectory(clients.map((c) => ({ name: c.name, role: c.role ?? 'operator', instituteIds: undefined, digest: tokenDigest(c.token) })));

describe('dashboard session cookie', () => {
  it('signs its client in until it expires, and not after', () => {
    let now = Date.parse('2026-11-23T10:00:00Z');
    const directory = directoryOf([{ name: 'ops.desk', token: TOKEN }]);
    const session = createDashboardSession(directory, { now: () => now });
    const client = directory.byToken(TOKEN)!;
    const cookie = cookieOf(session.issue(client, '/admin/queues', false));
    expect(cookie).not.toContain(TOKEN);
    expect(session.verify(`other=1; ${cookie}`)).toMatchObject({ name: 'ops.desk', role: 'operator' });
    now += (SESSION_TTL_SECONDS - 1) * 1000;
    expect(session.verify(cookie)?.name).toBe('ops.desk');
    now += 1000;
    expect(session.verify(cookie)).toBeUndefined();
  });

  it("is worthless once the client's token changes or the client is gone, cannot be moved to another client, and is Secure only over HTTPS", () => {
    const before = directoryOf([
      { name: 'ops', token: TOKEN },
      { name: 'root', token: OTHER, role: 'admin' },
    ]);
    const issued = createDashboardSession(before).issue(before.byToken(TOKEN)!, '/admin/queues', true);
    expect(issued).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
    expect(createDashboardSession(before).verify(cookieOf(issued))?.name).toBe('ops');
    // Renamed to the admin: the signature was made for "ops".
    expect(createDashboardSession(before).verify(cookieOf(issued).replace('=ops.', '=root.'))).toBeUndefined();
    expect(createDashboardSession(directoryOf([{ name: 'ops', token: OTHER }])).verify(cookieOf(issued))).toBeUndefined();
    expect(createDashboardSession(directoryOf([{ name: 'root', token: OTHER }])).verify(cookieOf(issued))).toBeUndefined();
    expect(createDashboardSession(before).verify(undefined)).toBeUndefined();
  });
});
