// The dashboard's session cookie: signed by the token, expires by itself, never holds the token.
import { describe, expect, it } from 'vitest';
import { SESSION_TTL_SECONDS, createDashboardSession } from '../../src/http/dashboard-session.ts';

const TOKEN = 'a-dashboard-token-of-some-length';
const cookieOf = (setCookie: string) => setCookie.split(';')[0]!;

describe('dashboard session cookie', () => {
  it('signs in until it expires, and not after', () => {
    let now = Date.parse('2026-11-23T10:00:00Z');
    const session = createDashboardSession(TOKEN, () => now);
    const cookie = cookieOf(session.issue('/admin/queues', false));
    expect(cookie).not.toContain(TOKEN);
    expect(session.verify(`other=1; ${cookie}`)).toBe(true);
    now += (SESSION_TTL_SECONDS - 1) * 1000;
    expect(session.verify(cookie)).toBe(true);
    now += 1000;
    expect(session.verify(cookie)).toBe(false);
  });

  it('is worthless under another token, and marked Secure only over HTTPS', () => {
    const issued = createDashboardSession(TOKEN).issue('/admin/queues', true);
    expect(issued).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
    expect(createDashboardSession('another-token-entirely-123').verify(cookieOf(issued))).toBe(false);
    expect(createDashboardSession(TOKEN).verify(undefined)).toBe(false);
  });
});
