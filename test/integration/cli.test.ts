// The CLI as a whole: `.env` in the working directory is configuration (real variables win), and
// every command the README tells a user to run exists.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.ts';
import { ROOT, killAllChildren, runCli, scratchDir } from '../helpers/cli.ts';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  killAllChildren();
  await h?.close();
});

/** A project directory whose .env points at the test sandbox, database and Redis. */
function projectWithDotEnv(overrides: Record<string, string> = {}): string {
  const dir = scratchDir();
  const lines = Object.entries({ ...h.env, ...overrides }).map(([k, v]) => `${k}=${v}`);
  writeFileSync(join(dir, '.env'), `# written by cli.test.ts\n${lines.join('\n')}\n`);
  return dir;
}

describe('.env', () => {
  it('is loaded from the working directory: `check` passes with nothing but .env', async () => {
    const cwd = projectWithDotEnv();
    const result = await runCli(['check'], { cwd, env: {} });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`settings: environment, plus ${join(cwd, '.env')}`);
    expect(result.stdout).toContain(`ok    classroom service  ${h.sandbox.url} accepted`);
  });

  it('loses to a variable set in the real environment', async () => {
    const cwd = projectWithDotEnv();
    const result = await runCli(['check'], { cwd, env: { CLASSROOM_X_API_KEY: 'set-in-the-shell' } });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('check CLASSROOM_X_API_KEY');
  });

  it('a wrong value in .env is overridden by a right one in the environment', async () => {
    const cwd = projectWithDotEnv({ CLASSROOM_X_API_KEY: 'wrong-in-dotenv' });
    const result = await runCli(['check'], { cwd, env: { CLASSROOM_X_API_KEY: h.env.CLASSROOM_X_API_KEY ?? 'sandbox-x-api-key' } });
    expect(result.code, result.stdout).toBe(0);
  });

  it('an invalid value in .env stops the command, naming the variable', async () => {
    const cwd = projectWithDotEnv({ CLASSROOM_API_KEY: 'short' });
    const result = await runCli(['status'], { cwd, env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('CLASSROOM_API_KEY: must be the 32-character alphanumeric key');
  });

  it('without .env, the environment alone is used and `check` says so', async () => {
    const result = await runCli(['check'], { env: h.env });
    expect(result.stdout).toContain('settings: environment only (no .env in this directory)');
  });
});

describe('README', () => {
  it('every `npx classroom-sync <command>` it shows is a command of the CLI', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const named = new Set([...readme.matchAll(/npx classroom-sync ([a-z][a-z-]*)/g)].map((m) => m[1]!));
    expect(named.size).toBeGreaterThan(5);
    const help = await runCli(['--help'], { env: {} });
    const commands = new Set([...help.stdout.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!));
    for (const command of named) expect(commands, `README mentions \`npx classroom-sync ${command}\``).toContain(command);
  });

  it('`npm start` is the demo, and `npm test` runs vitest, as the quick start says', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe('node bin/classroom-sync.js demo');
    expect(pkg.scripts.test).toMatch(/^vitest run/);
  });
});
