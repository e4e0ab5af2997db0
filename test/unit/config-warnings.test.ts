// Start-up warnings: a file of keys others can read, a key sent over plain http:// off this machine,
// every proxy hop trusted.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { configWarnings, isLoopback } from '../../src/config/warnings.ts';
import { looseFilePermissions } from '../../src/config/file-permissions.ts';

const dir = mkdtempSync(join(tmpdir(), 'config-warnings-'));
let files = 0;
/** A file with exactly `mode` (the umask does not apply to chmod). */
const fileWith = (mode: number, content = '{}'): string => {
  const path = join(dir, `file-${files++}.json`);
  writeFileSync(path, content);
  chmodSync(path, mode);
  return path;
};

const KEY = 'RealKey0123456789abcdefABCDEFghi';
const entry = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  instituteIds: [`inst-${name}`],
  userId: `user-${name}`,
  apiKey: `${name}Key`.padEnd(32, '7').slice(0, 32),
  xApiKey: `x-${name}`,
  namespace: `ns-${name}`,
  userAgent: `VendorIntegrations/ns-${name}`,
  ...extra,
});
const accountsFile = (mode: number, accounts = [entry('north')]) => fileWith(mode, JSON.stringify({ accounts }));

describe.skipIf(process.platform === 'win32')('looseFilePermissions', () => {
  it('says who may read the file and how to fix it; nothing when only its owner may', () => {
    const open = fileWith(0o644);
    expect(looseFilePermissions(open)).toBe(
      `${open} can be read by its group and other users (mode 0644), and it holds secrets: run \`chmod 600 ${open}\` so only its owner can read it`,
    );
    expect(looseFilePermissions(fileWith(0o640))).toMatch(/can be read by its group \(mode 0640\)/);
    expect(looseFilePermissions(fileWith(0o604))).toMatch(/can be read by other users \(mode 0604\)/);
    expect(looseFilePermissions(fileWith(0o660))).toMatch(/can be read and changed by its group \(mode 0660\)/);
    expect(looseFilePermissions(fileWith(0o602))).toMatch(/can be changed by other users \(mode 0602\)/);
    expect(looseFilePermissions(fileWith(0o600))).toBeUndefined();
    expect(looseFilePermissions(fileWith(0o400))).toBeUndefined();
    // Reading it reports a missing file; this only speaks of permissions.
    expect(looseFilePermissions(join(dir, 'absent.json'))).toBeUndefined();
  });
});

describe('configWarnings', () => {
  it.skipIf(process.platform === 'win32')('CLASSROOM_ACCOUNTS_FILE readable by group or others warns, naming the setting; 0600 does not', () => {
    const open = accountsFile(0o644);
    const [warning, ...rest] = configWarnings(loadConfig({ CLASSROOM_ACCOUNTS_FILE: open }));
    expect(rest).toEqual([]);
    expect(warning).toEqual({ subject: 'accounts file', message: expect.stringMatching(/^CLASSROOM_ACCOUNTS_FILE: .* \(mode 0644\).*`chmod 600 /) });
    expect(warning?.message).not.toContain(entry('north').apiKey);
    expect(configWarnings(loadConfig({ CLASSROOM_ACCOUNTS_FILE: accountsFile(0o600) }))).toEqual([]);
  });

  it.skipIf(process.platform === 'win32')('API_CLIENTS_FILE readable by group or others warns, naming the setting; 0600 does not', () => {
    const token = 'a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0';
    const clients = (mode: number) => fileWith(mode, JSON.stringify({ clients: [{ name: 'north-lms', token, role: 'publisher' }] }));
    const [warning, ...rest] = configWarnings(loadConfig({ API_CLIENTS_FILE: clients(0o604) }));
    expect(rest).toEqual([]);
    expect(warning).toEqual({
      subject: 'clients file',
      message: expect.stringMatching(/^API_CLIENTS_FILE: .* can be read by other users \(mode 0604\).*`chmod 600 /),
    });
    expect(warning?.message).not.toContain(token);
    expect(configWarnings(loadConfig({ API_CLIENTS_FILE: clients(0o600) }))).toEqual([]);
  });

  it('CLASSROOM_BASE_URL over http:// to another host warns, naming the host and never the key; loopback and https:// do not', () => {
    const [warning, ...rest] = configWarnings(loadConfig({ CLASSROOM_BASE_URL: 'http://user:pass@classroom.example.com:8080/api', CLASSROOM_API_KEY: KEY }));
    expect(rest).toEqual([]);
    expect(warning).toEqual({
      subject: 'remote address',
      message:
        'CLASSROOM_BASE_URL sends the API key over plain http:// to classroom.example.com:8080, which is not a loopback address: anyone on the network path can read it; use an https:// address',
    });
    expect(warning?.message).not.toMatch(/pass|RealKey/);
    for (const baseUrl of ['http://127.0.0.1:4010', 'http://127.8.9.10', 'http://localhost:3000', 'http://[::1]:8080', 'https://classroom.example.com']) {
      expect(configWarnings(loadConfig({ CLASSROOM_BASE_URL: baseUrl, CLASSROOM_API_KEY: KEY })), baseUrl).toEqual([]);
    }
    // The sandbox's published key (docker compose's worker reaches the sandbox container over http://).
    expect(configWarnings(loadConfig({ CLASSROOM_BASE_URL: 'http://sandbox:4010' }))).toEqual([]);
  });

  it('file accounts sharing one http:// host give one warning naming them all; an https:// account none', () => {
    const file = accountsFile(0o600, [
      entry('north', { baseUrl: 'http://10.1.2.3' }),
      entry('south'),
      entry('east', { baseUrl: 'https://remote.example.test' }),
    ]);
    const warnings = configWarnings(loadConfig({ CLASSROOM_ACCOUNTS_FILE: file, CLASSROOM_BASE_URL: 'http://10.1.2.3' }));
    expect(warnings.map((w) => w.message)).toEqual([
      'accounts north, south send their API keys over plain http:// to 10.1.2.3, which is not a loopback address: anyone on the network path can read it; use an https:// baseUrl (or CLASSROOM_BASE_URL, which accounts without one use)',
    ]);
    const one = configWarnings(loadConfig({ CLASSROOM_ACCOUNTS_FILE: file, CLASSROOM_BASE_URL: 'https://remote.example.test' }));
    expect(one.map((w) => w.message)).toEqual([expect.stringMatching(/^account north sends its API key over plain http:\/\/ to 10\.1\.2\.3,/)]);
  });

  it('TRUST_PROXY=true warns that anyone reaching the port picks their address, with the fix; a hop count or addresses do not', () => {
    expect(configWarnings(loadConfig({ TRUST_PROXY: 'true' }))).toEqual([
      {
        subject: 'trusted proxies',
        message:
          'TRUST_PROXY=true believes X-Forwarded-For from every hop, so anyone who reaches PORT directly picks their own address (and a fresh one for each failed sign-in); set TRUST_PROXY to the number of proxies in front (e.g. 1) or to their addresses or networks (e.g. 10.0.0.0/8)',
      },
    ]);
    for (const trustProxy of ['false', '1', '2', '10.0.0.0/8', '127.0.0.1,::1'])
      expect(configWarnings(loadConfig({ TRUST_PROXY: trustProxy })), trustProxy).toEqual([]);
  });

  it('isLoopback: 127.0.0.0/8, ::1 (and IPv4-mapped 127.x), localhost; nothing else', () => {
    for (const host of ['127.0.0.1', '127.255.255.254', '[::1]', '[::ffff:7f00:1]', 'localhost', 'LOCALHOST', 'localhost.'])
      expect(isLoopback(host), host).toBe(true);
    for (const host of ['10.0.0.1', '128.0.0.1', '[::2]', '[::ffff:a00:1]', 'localhost.example.com', 'example.com', '0.0.0.0'])
      expect(isLoopback(host), host).toBe(false);
  });
});
