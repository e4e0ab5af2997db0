// `classroom-sync check` against the sandbox, which refuses exactly what the real service would:
// the right settings pass, and each wrong one is named in plain words with a non-zero exit.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkClassroom, runCheck } from '../../src/commands/check.ts';
import { type Config, SANDBOX_DEFAULTS, loadConfig } from '../../src/config/config.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { rowOf, untilSynced } from '../helpers/batches.ts';
import { killAllChildren, runCli } from '../helpers/cli.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { startTestWorker } from './http-helpers.ts';

const { h, defer } = useHarness();
defer(killAllChildren);

const withEnv = (overrides: Record<string, string>): Config => loadConfig({ ...h.env, ...overrides });

describe('check: the remote, one harmless read', () => {
  it('passes with the right settings and makes no write', async () => {
    const before = h.sandbox.state({ classes: false });
    const finding = await checkClassroom(h.config.classroom);
    expect(finding).toMatchObject({ status: 'ok', subject: 'classroom service' });
    expect(finding.detail).toContain(`knows institute ${h.config.classroom.instituteId}`);
    const after = h.sandbox.state({ classes: false });
    expect(after.classCount).toBe(before.classCount);
    expect(after.calls.totalCalls - before.calls.totalCalls).toBe(1);
    expect(after.calls.byOperation.listClasses?.outcomes.ok).toBe((before.calls.byOperation.listClasses?.outcomes.ok ?? 0) + 1);
  });

  // Each wrong setting, and the words that must send the operator to the right variable.
  const wrong: [string, Record<string, string>, RegExp][] = [
    ['API key', { CLASSROOM_API_KEY: 'wrongKey0123456789abcdefABCDEF00' }, /refused the Basic credentials: check CLASSROOM_USER_ID and CLASSROOM_API_KEY/],
    ['user id', { CLASSROOM_USER_ID: 'someone-else' }, /refused the Basic credentials: check CLASSROOM_USER_ID and CLASSROOM_API_KEY/],
    ['x-api-key', { CLASSROOM_X_API_KEY: 'not-the-x-api-key' }, /x-api-key header was refused: check CLASSROOM_X_API_KEY\.$/],
    ['user-agent', { CLASSROOM_USER_AGENT: 'curl/8.0' }, /user-agent was refused: set CLASSROOM_USER_AGENT .*now "curl\/8\.0"/],
    [
      'namespace',
      { CLASSROOM_NAMESPACE: 'other-namespace' },
      /namespace was refused: check CLASSROOM_NAMESPACE \(now "other-namespace"\) and CLASSROOM_NAMESPACE_HEADER/,
    ],
    [
      'namespace header',
      { CLASSROOM_NAMESPACE_HEADER: 'x-wise-namespace' },
      /CLASSROOM_NAMESPACE_HEADER \(now x-wise-namespace; the spec says x-service-namespace/,
    ],
    ['institute', { CLASSROOM_INSTITUTE_ID: 'not-an-institute' }, /does not know institute not-an-institute: check CLASSROOM_INSTITUTE_ID/],
  ];
  for (const [what, overrides, fix] of wrong) {
    it(`names the fix for a wrong ${what}`, async () => {
      const finding = await checkClassroom(withEnv(overrides).classroom);
      expect(finding.status).toBe('fail');
      expect(finding.fix).toMatch(fix);
      // The remote's own words are shown too, for what the explanation cannot know.
      expect(finding.detail).toMatch(/listClasses failed with HTTP 40[134]: /);
    });
  }

  it('names CLASSROOM_BASE_URL when nothing listens there', async () => {
    const closed = await import('node:net').then(
      (net) =>
        new Promise<number>((resolve) => {
          const server = net.createServer().listen(0, '127.0.0.1', () => {
            const { port } = server.address() as { port: number };
            server.close(() => resolve(port));
          });
        }),
    );
    const finding = await checkClassroom(withEnv({ CLASSROOM_BASE_URL: `http://127.0.0.1:${closed}` }).classroom);
    expect(finding).toMatchObject({ status: 'fail' });
    expect(finding.detail).toContain('ECONNREFUSED');
    expect(finding.fix).toMatch(/^CLASSROOM_BASE_URL is wrong or unreachable from here/);
  });

  it('names CLASSROOM_BASE_URL when it has a path the API does not have', async () => {
    const finding = await checkClassroom(withEnv({ CLASSROOM_BASE_URL: `${h.sandbox.url}/api/v1` }).classroom);
    expect(finding.status).toBe('fail');
    expect(finding.fix).toMatch(/No such API route: CLASSROOM_BASE_URL \(http:\/\/127\.0\.0\.1:\d+\/api\/v1\) is probably wrong/);
  });

  it('says the add-class path and edit method cannot be checked by a read, and how a wrong one shows up', async () => {
    const lines: string[] = [];
    const code = await runCheck(withEnv({ CLASSROOM_ADD_CLASS_PATH: '/teacher/addClass' }), {}, (l) => lines.push(l));
    expect(code).toBe(0); // a read cannot tell: the note says so
    const note = lines.find((l) => l.startsWith('note'));
    expect(note).toContain('CLASSROOM_ADD_CLASS_PATH (/teacher/addClass) and CLASSROOM_EDIT_CLASS_METHOD (POST) are used only by writes');
    expect(note).toContain('retry --failed');
  });
});

describe('check: the command', () => {
  it('exits 0 and reports PostgreSQL, Redis and the remote as ok with the right settings', async () => {
    const result = await runCli(['check'], { env: h.env });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^ok\s+PostgreSQL\s+postgres:\/\/postgres@127\.0\.0\.1:5432\/classroom_sync_test_\w+ reachable$/m);
    expect(result.stdout).toMatch(/^ok\s+Redis\s+redis:\/\/127\.0\.0\.1:6379 reachable/m);
    expect(result.stdout).toMatch(/^ok\s+classroom service\s+http:\/\/127\.0\.0\.1:\d+ accepted the credentials/m);
    expect(result.stdout).toContain('all checks passed');
  });

  it('exits 1 and names the variable for a wrong setting', async () => {
    const result = await runCli(['check'], { env: { ...h.env, CLASSROOM_X_API_KEY: 'wrong' } });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^FAIL\s+classroom service\s+http:\/\/127\.0\.0\.1:\d+: listClasses failed with HTTP 403: x-api-key not recognised$/m);
    expect(result.stdout).toContain('→ The x-api-key header was refused: check CLASSROOM_X_API_KEY.');
    expect(result.stdout).toContain('1 check(s) failed');
  });

  it('exits 1 when PostgreSQL or Redis cannot be reached, and says how to start them', async () => {
    const result = await runCli(['check'], { env: { ...h.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x', REDIS_URL: 'redis://127.0.0.1:1' } });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^FAIL\s+PostgreSQL\s+cannot reach postgres:\/\/postgres@127\.0\.0\.1:1\/x \(ECONNREFUSED\)$/m);
    expect(result.stdout).toMatch(/^FAIL\s+Redis\s+cannot reach redis:\/\/127\.0\.0\.1:1/m);
    expect(result.stdout).toContain('docker compose up -d postgres redis');
    expect(result.stdout).toMatch(/^ok\s+classroom service/m);
  });
});

describe('check: warnings about the settings', () => {
  it('warns about an accounts file its group or others can read, not one only its owner can, without failing; a starting worker logs it once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'check-accounts-'));
    defer(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'accounts.json');
    const d = SANDBOX_DEFAULTS;
    const account = { name: 'main', instituteIds: [h.config.classroom.instituteId], userId: d.CLASSROOM_USER_ID, apiKey: d.CLASSROOM_API_KEY };
    writeFileSync(
      file,
      JSON.stringify({ accounts: [{ ...account, xApiKey: d.CLASSROOM_X_API_KEY, namespace: d.CLASSROOM_NAMESPACE, userAgent: d.CLASSROOM_USER_AGENT }] }),
    );
    const check = async (mode: number) => {
      chmodSync(file, mode);
      const lines: string[] = [];
      const code = await runCheck(withEnv({ CLASSROOM_ACCOUNTS_FILE: file }), {}, (l) => lines.push(l));
      return { code, out: lines.join('\n') };
    };
    const open = await check(0o644);
    expect(open.code, open.out).toBe(0);
    expect(open.out).toContain(`warn  accounts file      CLASSROOM_ACCOUNTS_FILE: ${file} can be read by its group and other users (mode 0644)`);
    expect(open.out).toContain(`run \`chmod 600 ${file}\``);
    expect(open.out).not.toContain(d.CLASSROOM_API_KEY);
    const closed = await check(0o600);
    expect(closed.code, closed.out).toBe(0);
    expect(closed.out).not.toMatch(/^warn/m);

    // A starting worker says the same once, at warn.
    chmodSync(file, 0o640);
    const lines: { level: number; msg: string; warning?: string }[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
    const worker = await startTestWorker(h, { CLASSROOM_ACCOUNTS_FILE: file }, { logger });
    await worker.stop();
    expect(lines.filter((l) => l.warning)).toEqual([
      expect.objectContaining({ level: 40, warning: 'accounts file', msg: expect.stringMatching(/can be read by its group \(mode 0640\)/) }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(d.CLASSROOM_API_KEY);
  });
});

describe('check and status while the remote refuses the key', () => {
  it('check exits 1 naming "credentials refused since T", status prints the same refusal, and both clear once the key works', async () => {
    // The worker and the commands agree on the probe interval, as one deployment's settings would.
    const settings = { CLASSROOM_KEY_PROBE_EVERY: '1s' };
    const env = { ...h.env, ...settings };
    h.sandbox.faults.set({ refuseKey: { status: 401 } });
    const worker = await startTestWorker(h, settings);
    try {
      await publishBatches(publishDepsOf(h), [{ batchId: 'refused-key-1', name: 'Refused key', subject: 'Maths' }]);
      const breaker = h.runtime.remotes.default.breaker;
      const opened = await waitFor(() => breaker.state(), 'a worker to open the credentials breaker on the 401', 10_000);
      const since = opened.since.toISOString().replaceAll('.', '\\.');

      const check = await runCli(['check'], { env });
      expect(check.code, check.stdout + check.stderr).toBe(1);
      expect(check.stdout).toMatch(/^FAIL\s+classroom service\s+http:\/\/127\.0\.0\.1:\d+: listClasses failed with HTTP 401: /m);
      const workers = new RegExp(
        `^FAIL\\s+workers\\s+credentials refused since ${since} \\(HTTP 401: [^\\n]*\\): workers take no jobs and probe every 1 s$`,
        'm',
      );
      expect(check.stdout).toMatch(workers);
      expect(check.stdout).toContain('they resume by themselves once a probe succeeds');
      expect(check.stdout).toContain('2 check(s) failed');

      const status = await runCli(['status'], { env });
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^pending\s+1$/m);
      const line = status.stdout.split('\n').find((l) => l.startsWith('credentials refused since'));
      expect(line).toMatch(
        new RegExp(
          `^credentials refused since ${since} \\(HTTP 401: .*\\): its batches wait, unchanged, using no attempt, while one worker probes the key every 1 s`,
        ),
      );

      // Asked about the waiting batch itself, status says why it waits.
      const one = await runCli(['status', 'refused-key-1'], { env });
      expect(one.code, one.stderr).toBe(0);
      expect(one.stdout).toMatch(new RegExp(`^credentials refused since ${since} `, 'm'));

      // The key works again: a probe closes the breaker, the batch syncs on its first attempt, and
      // both commands say nothing is held back.
      h.sandbox.faults.set({});
      expect((await untilSynced(h, 'refused-key-1', { timeoutMs: 15_000 })).attempts).toBe(1);
      await waitFor(async () => (await breaker.state()) === undefined, 'the breaker to close');
      const after = await runCli(['check'], { env });
      expect(after.code, after.stdout).toBe(0);
      expect(after.stdout).toMatch(/^ok\s+workers\s+the fleet is not holding back/m);
      expect((await runCli(['status'], { env })).stdout).not.toContain('credentials refused');
      expect((await runCli(['status', 'refused-key-1'], { env })).stdout).not.toContain('credentials refused');
      expect((await rowOf(h, 'refused-key-1'))?.lastError).toBeNull();
    } finally {
      h.sandbox.faults.set({});
      await worker.stop();
    }
  });
});
