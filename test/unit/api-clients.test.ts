// API_CLIENTS_FILE, API_TOKEN, DASHBOARD_SESSION_SECRET and TRUST_PROXY as start-up reads them: a bad client stops start-up
// naming the client and the field, never the token.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER_TOKENS } from '../../src/access/tokens.ts';
import { ConfigError, loadConfig } from '../../src/config/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'classroom-sync-clients-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const GOOD = 'ffffffff0123456789abcdef0123456789abcdef';
let files = 0;

function withClients(body: string, env: Record<string, string> = {}) {
  const path = join(dir, `clients-${files++}.yaml`);
  writeFileSync(path, body, { mode: 0o600 });
  return () => loadConfig({ API_CLIENTS_FILE: path, ...env });
}

function problemsOf(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.variable}: ${p.reason}`);
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('API_CLIENTS_FILE', () => {
  it('reads YAML or JSON clients, a token as its digest only, with their roles and institutes', () => {
    const digest = createHash('sha256').update(`${GOOD}-2`).digest('hex');
    const config = withClients(
      `clients:\n  - { name: north-lms, token: ${GOOD}, role: publisher, instituteIds: [inst-north] }\n  - { name: ops, tokenSha256: ${digest.toUpperCase()}, role: operator }\n`,
    )();
    expect(config.http.fileClients).toEqual([
      { name: 'north-lms', role: 'publisher', instituteIds: ['inst-north'], digest: createHash('sha256').update(GOOD).digest('hex') },
      { name: 'ops', role: 'operator', instituteIds: undefined, digest },
    ]);
    expect(JSON.stringify(config)).not.toContain(GOOD);
    const json = withClients(JSON.stringify({ clients: [{ name: 'a', token: GOOD, role: 'admin' }] }))();
    expect(json.http.fileClients.map((c) => c.role)).toEqual(['admin']);
  });

  it('names the client and the field of every problem, and never repeats a token', () => {
    const short = 'short-token-1234';
    const problems = problemsOf(
      withClients(
        [
          'clients:',
          `  - { name: a, token: ${short}, role: publisher }`,
          `  - { name: b, token: ${PLACEHOLDER_TOKENS[0]}, role: reader }`,
          `  - { name: c, token: ${GOOD}, tokenSha256: ${'a'.repeat(64)}, role: reader }`,
          `  - { name: d, token: ${GOOD}x, role: superuser }`,
          `  - { name: e, tokenSha256: ${createHash('sha256').update(PLACEHOLDER_TOKENS[0]!).digest('hex')}, role: admin }`,
          `  - { name: f, token: ${GOOD}y, role: reader, instituteIds: [] }`,
        ].join('\n'),
      ),
    );
    expect(problems).toEqual([
      'API_CLIENTS_FILE: client "a" (clients[0]) token: must be at least 32 characters (e.g. `openssl rand -hex 32`)',
      'API_CLIENTS_FILE: client "b" (clients[1]) token: is the placeholder from the documentation; generate one with `openssl rand -hex 32`',
      'API_CLIENTS_FILE: client "c" (clients[2]) token: give exactly one of token and tokenSha256',
      'API_CLIENTS_FILE: client "d" (clients[3]) role: must be one of publisher, reader, operator, admin',
      'API_CLIENTS_FILE: client "e" (clients[4]) tokenSha256: is the SHA-256 of the placeholder from the documentation; generate a token with `openssl rand -hex 32`',
      'API_CLIENTS_FILE: client "f" (clients[5]) instituteIds: must list at least one institute (leave it out for every institute)',
    ]);
    for (const problem of problems) expect(problem).not.toContain(short);
  });

  it('refuses an operator or admin limited to some institutes: the dashboard and /metrics show every institute', () => {
    const problems = problemsOf(
      withClients(
        [
          'clients:',
          `  - { name: north-ops, token: ${GOOD}a, role: operator, instituteIds: [inst-north] }`,
          `  - { name: north-admin, token: ${GOOD}b, role: admin, instituteIds: [inst-north] }`,
          `  - { name: north-reports, token: ${GOOD}c, role: reader, instituteIds: [inst-north] }`,
          `  - { name: north-lms, token: ${GOOD}d, role: publisher, instituteIds: [inst-north] }`,
          `  - { name: ops, token: ${GOOD}e, role: operator }`,
        ].join('\n'),
      ),
    );
    const why =
      'instituteIds: a client with the operator or admin role opens the queue dashboard and /metrics, which show and act on every institute, ' +
      'so it cannot be limited to some; leave instituteIds out, or give it the reader role (read these institutes) or the publisher role (publish and read them)';
    expect(problems).toEqual([`API_CLIENTS_FILE: client "north-ops" (clients[0]) ${why}`, `API_CLIENTS_FILE: client "north-admin" (clients[1]) ${why}`]);
  });

  it('refuses two clients with one name or one token, and API_TOKEN equal to a client token', () => {
    expect(problemsOf(withClients(`clients:\n  - { name: a, token: ${GOOD}, role: reader }\n  - { name: a, token: ${GOOD}, role: admin }\n`))).toEqual([
      'API_CLIENTS_FILE: client "a" (clients[1]) name: is also the name of clients[0]',
      'API_CLIENTS_FILE: client "a" (clients[1]) token: is also the token of client "a"; give each client its own',
    ]);
    expect(problemsOf(withClients(`clients:\n  - { name: a, token: ${GOOD}, role: reader }\n`, { API_TOKEN: GOOD }))).toEqual([
      'API_TOKEN: is also the token of client "a" in API_CLIENTS_FILE; give each its own',
    ]);
    expect(problemsOf(() => loadConfig({ API_CLIENTS_FILE: join(dir, 'missing.yaml') }))).toEqual([
      `API_CLIENTS_FILE: cannot read ${join(dir, 'missing.yaml')}: no such file`,
    ]);
  });

  it('API_TOKEN needs 32 characters and refuses the placeholder of .env.example', () => {
    expect(problemsOf(() => loadConfig({ API_TOKEN: 'sixteen-chars-ok' }))).toEqual([
      'API_TOKEN: must be at least 32 characters (e.g. `openssl rand -hex 32`)',
    ]);
    expect(problemsOf(() => loadConfig({ API_TOKEN: 'change-me-to-a-long-random-string' }))[0]).toMatch(/^API_TOKEN: is the placeholder/);
    expect(loadConfig({ API_TOKEN: GOOD }).http.apiToken).toBe(GOOD);
  });
});

describe('DASHBOARD_SESSION_SECRET', () => {
  it('is refused by name when short, spaced or the placeholder, never echoed; unset, the fleet generates one', () => {
    const short = 'too-short-a-session-secret';
    expect(problemsOf(() => loadConfig({ DASHBOARD_SESSION_SECRET: short }))).toEqual([
      'DASHBOARD_SESSION_SECRET: must be at least 32 characters (e.g. `openssl rand -hex 32`)',
    ]);
    expect(problemsOf(() => loadConfig({ DASHBOARD_SESSION_SECRET: `${GOOD} ${GOOD}` }))).toEqual([
      'DASHBOARD_SESSION_SECRET: must not contain spaces or line breaks',
    ]);
    expect(problemsOf(() => loadConfig({ DASHBOARD_SESSION_SECRET: PLACEHOLDER_TOKENS[0]! }))[0]).toMatch(/^DASHBOARD_SESSION_SECRET: is the placeholder/);
    expect(loadConfig({ DASHBOARD_SESSION_SECRET: GOOD }).http.sessionSecret).toBe(GOOD);
    expect(loadConfig({}).http.sessionSecret).toBeUndefined();
  });
});

describe('TRUST_PROXY', () => {
  it('takes true, false, a hop count, or addresses and networks', () => {
    expect(loadConfig({}).http.trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).http.trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).http.trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1' }).http.trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1', '::1']);
    expect(problemsOf(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' }))[0]).toMatch(/^TRUST_PROXY: must be true, false, .*"10.0.0.0\/33" is none of them$/);
    expect(problemsOf(() => loadConfig({ TRUST_PROXY: 'yes' }))[0]).toMatch(/"yes" is none of them/);
  });
});
