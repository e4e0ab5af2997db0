import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, SANDBOX_DEFAULTS, loadConfig } from '../../src/config/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'accounts-'));
let files = 0;
const write = (content: unknown, ext = 'json'): string => {
  const path = join(dir, `accounts-${files++}.${ext}`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return path;
};
const key = (c: string) => c.repeat(32);
const account = (name: string, instituteIds: string[], extra: Record<string, unknown> = {}) => ({
  name,
  instituteIds,
  userId: `user-${name}`,
  apiKey: key(name[0] ?? 'a'),
  xApiKey: `x-${name}`,
  namespace: `ns-${name}`,
  userAgent: `VendorIntegrations/ns-${name}`,
  ...extra,
});
const problemsOf = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
};

describe('accounts: CLASSROOM_ACCOUNTS_FILE', () => {
  it('without the file, the CLASSROOM_* settings are the one account, "default", exactly as before', () => {
    const config = loadConfig({ CLASSROOM_RATE_LIMIT_PER_MINUTE: '90' });
    expect(config.accounts).toHaveLength(1);
    expect(config.accounts[0]).toMatchObject({ name: 'default', instituteIds: [SANDBOX_DEFAULTS.CLASSROOM_INSTITUTE_ID] });
    expect(config.accounts[0]?.classroom).toEqual(config.classroom);
    expect(config.classroom.rateLimitPerMinute).toBe(90);
  });

  it('reads each account; baseUrl, ratePerMinute and the variant settings fall back to the CLASSROOM_* settings', () => {
    const file = write({
      accounts: [
        account('north', ['inst-n1', 'inst-n2']),
        account('south', ['inst-s'], {
          baseUrl: 'https://south.example.test/',
          ratePerMinute: 120,
          editClassMethod: 'PUT',
          namespaceHeader: 'X-Wise-Namespace',
        }),
      ],
    });
    const config = loadConfig({ CLASSROOM_ACCOUNTS_FILE: file, CLASSROOM_BASE_URL: 'https://remote.example.test', CLASSROOM_RATE_LIMIT_PER_MINUTE: '300' });
    expect(config.accounts.map((a) => a.name)).toEqual(['north', 'south']);
    const [north, south] = config.accounts;
    expect(north?.classroom).toMatchObject({
      userId: 'user-north',
      instituteId: 'inst-n1',
      baseUrl: 'https://remote.example.test',
      rateLimitPerMinute: 300,
      editClassMethod: 'POST',
    });
    expect(south?.classroom).toMatchObject({
      baseUrl: 'https://south.example.test',
      rateLimitPerMinute: 120,
      editClassMethod: 'PUT',
      namespaceHeader: 'x-wise-namespace',
    });
    // Without CLASSROOM_INSTITUTE_ID, the first account and its first institute are the default.
    expect(config.classroom).toMatchObject({ userId: 'user-north', instituteId: 'inst-n1' });
  });

  it("CLASSROOM_RATE_WINDOW is every account's; a window under a second is refused by name", () => {
    const file = write({ accounts: [account('north', ['inst-n1'])] });
    const config = loadConfig({ CLASSROOM_ACCOUNTS_FILE: file, CLASSROOM_RATE_WINDOW: '30s' });
    expect(config.accounts.map((a) => a.classroom.rateLimitWindowMs)).toEqual([30_000]);
    expect(loadConfig({}).classroom.rateLimitWindowMs).toBe(60_000);
    expect(() => loadConfig({ CLASSROOM_RATE_WINDOW: '500ms' })).toThrow(/CLASSROOM_RATE_WINDOW.*at least 1s/);
  });

  it("an account's webhookUrl needs its webhookSecret; both give its institutes an endpoint of their own", () => {
    const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
    const north = { ...account('north', ['inst-n1']), webhookUrl: 'https://north.example.test/hooks', webhookSecret: secret };
    const config = loadConfig({ CLASSROOM_ACCOUNTS_FILE: write({ accounts: [north, account('south', ['inst-s1'])] }) });
    expect(config.accounts.map((a) => a.webhook)).toEqual([{ url: 'https://north.example.test/hooks', secrets: [secret] }, undefined]);
    const { webhookSecret: _, ...unsigned } = north;
    expect(() => loadConfig({ CLASSROOM_ACCOUNTS_FILE: write({ accounts: [unsigned] }) })).toThrow(
      /account "north" \(accounts\[0\]\) webhookSecret: must be set when webhookUrl is/,
    );
    const badSecret = { ...north, webhookSecret: 'whsec_short' };
    const error = (() => {
      try {
        loadConfig({ CLASSROOM_ACCOUNTS_FILE: write({ accounts: [badSecret] }) });
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    })();
    expect(error).toMatch(/webhookSecret: must/);
    expect(error).not.toContain('whsec_short');
  });

  it('reads YAML too', () => {
    const a = account('east', ['inst-e']);
    const yaml = `accounts:\n  - name: east\n    instituteIds: [inst-e]\n    userId: ${a.userId}\n    apiKey: ${a.apiKey}\n    xApiKey: ${a.xApiKey}\n    namespace: ${a.namespace}\n    userAgent: ${a.userAgent}\n    ratePerMinute: 60\n`;
    const config = loadConfig({ CLASSROOM_ACCOUNTS_FILE: write(yaml, 'yaml') });
    expect(config.accounts[0]).toMatchObject({ name: 'east', instituteIds: ['inst-e'], classroom: { apiKey: a.apiKey, rateLimitPerMinute: 60 } });
  });

  it('the account serving CLASSROOM_INSTITUTE_ID is the default; an institute no account serves adds the CLASSROOM_* account "default"', () => {
    const file = write({ accounts: [account('north', ['inst-n']), account('south', ['inst-s1', 'inst-s2'])] });
    const served = loadConfig({ CLASSROOM_ACCOUNTS_FILE: file, CLASSROOM_INSTITUTE_ID: 'inst-s2' });
    expect(served.accounts).toHaveLength(2);
    expect(served.classroom).toMatchObject({ userId: 'user-south', instituteId: 'inst-s2' });
    const own = loadConfig({ CLASSROOM_ACCOUNTS_FILE: file, CLASSROOM_INSTITUTE_ID: 'inst-own', CLASSROOM_USER_ID: 'env-user' });
    expect(own.accounts.map((a) => a.name)).toEqual(['north', 'south', 'default']);
    expect(own.classroom).toMatchObject({ userId: 'env-user', instituteId: 'inst-own' });
  });

  it('names every problem by account and field, and never repeats a value from the file', () => {
    const secret = 'not-a-valid-key-but-a-secret-9f8e7d';
    const file = write({
      accounts: [
        account('north', ['inst-n'], { apiKey: secret }),
        account('south', ['inst-n'], { editClassMethod: 'PATCH', apikey: 'typo' }),
        { ...account('bad name!', ['inst-b']) },
        account('North', [], { userId: 'user-south', apiKey: key('s') }),
      ],
    });
    const message = problemsOf({ CLASSROOM_ACCOUNTS_FILE: file });
    expect(message).toContain('CLASSROOM_ACCOUNTS_FILE: account "north" (accounts[0]) apiKey: must be the 32-character alphanumeric key');
    expect(message).toContain('account "south" (accounts[1]) editClassMethod:');
    expect(message).toMatch(/account "south" \(accounts\[1\]\): Unrecognized key: "apikey"/);
    expect(message).toContain('accounts[2] name: must be 1 to 40 letters');
    expect(message).toContain('account "North" (accounts[3]) instituteIds: must list at least one institute');
    expect(message).not.toContain(secret);
    expect(message).not.toContain('typo');
  });

  it('refuses an institute served twice, a name used twice and one key under two accounts', () => {
    const file = write({
      accounts: [
        account('north', ['inst-n']),
        account('south', ['inst-n', 'inst-s']),
        account('NORTH', ['inst-x']),
        account('west', ['inst-w'], { userId: 'user-north', apiKey: key('n') }),
      ],
    });
    const message = problemsOf({ CLASSROOM_ACCOUNTS_FILE: file });
    expect(message).toContain('account "south" (accounts[1]) instituteIds: institute inst-n is already served by account "north"');
    expect(message).toContain('account "NORTH" (accounts[2]) name: accounts[0] has the same name');
    expect(message).toContain('account "west" (accounts[3]) apiKey: account "north" has the same user id and API key');
    expect(message).not.toContain(key('n'));
  });

  it('a missing file or a syntax error names the file and the line, without echoing the line', () => {
    expect(problemsOf({ CLASSROOM_ACCOUNTS_FILE: join(dir, 'absent.json') })).toContain(`cannot read ${join(dir, 'absent.json')}: no such file`);
    const broken = write('{"accounts": [{"name": "north",\n "apiKey": "secretsecretsecret" "userId": "u"}]}');
    const message = problemsOf({ CLASSROOM_ACCOUNTS_FILE: broken });
    expect(message).toMatch(/is not valid JSON or YAML at line 2, column \d+/);
    expect(message).not.toContain('secretsecretsecret');
    expect(problemsOf({ CLASSROOM_ACCOUNTS_FILE: write({ accounts: [] }) })).toContain('CLASSROOM_ACCOUNTS_FILE: accounts: must list at least one account');
  });

  it('an account named "default" in the file cannot sit beside the CLASSROOM_* account', () => {
    const file = write({ accounts: [account('default', ['inst-d'])] });
    expect(problemsOf({ CLASSROOM_ACCOUNTS_FILE: file, CLASSROOM_INSTITUTE_ID: 'inst-other' })).toContain(
      'no account in the file serves CLASSROOM_INSTITUTE_ID, so the CLASSROOM_* settings would form account "default"',
    );
  });
});

describe('header values: CR, LF and NUL are refused by name, the value never repeated', () => {
  // Each reaches the remote in a header (the user id inside Authorization): a line break would start a header of its own.
  const injected = 'Injected-Header: secret-7c1d';
  const bad = [`ok\r\n${injected}`, `ok\n${injected}`, `ok\r${injected}`, `ok\u0000${injected}`];

  it('in the environment', () => {
    for (const variable of ['CLASSROOM_USER_ID', 'CLASSROOM_X_API_KEY', 'CLASSROOM_USER_AGENT', 'CLASSROOM_NAMESPACE']) {
      for (const value of bad) {
        const message = problemsOf({ [variable]: value });
        expect(message).toContain(`${variable}: must not contain a line break (CR or LF) or NUL: it is sent as an HTTP header value`);
        expect(message).not.toContain('secret-7c1d');
      }
    }
    expect(loadConfig({ CLASSROOM_USER_AGENT: 'VendorIntegrations/ns (tab\tand spaces are fine)' }).classroom.userAgent).toContain('\t');
  });

  it('in the accounts file, named by account and field', () => {
    for (const field of ['userId', 'xApiKey', 'userAgent', 'namespace']) {
      for (const value of bad) {
        const file = write({ accounts: [account('north', ['inst-n'], { [field]: value })] });
        const message = problemsOf({ CLASSROOM_ACCOUNTS_FILE: file });
        expect(message).toContain(`account "north" (accounts[0]) ${field}: must not contain a line break (CR or LF) or NUL`);
        expect(message).not.toContain('secret-7c1d');
      }
    }
  });
});
