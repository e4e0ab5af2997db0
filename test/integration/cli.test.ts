// The CLI as a whole: `.env` in the working directory is configuration (real variables win), and
// every command the README and docs/ tell a user to run exists: the quick start's against package.json.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, killAllChildren, runCli, scratchDir } from '../helpers/cli.ts';
import { headingAnchors, relativeLinks } from '../helpers/markdown.ts';
import { INSTALL_TEST_TOOLS } from '../helpers/tools.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h, defer } = useHarness();
defer(killAllChildren);

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

/** README.md and every page under docs/, by path from the repository root. */
function userDocs(): { path: string; text: string }[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', ...pages].map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));
}

describe('README', () => {
  it('is short: under 350 lines (the rest lives in docs/)', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n');
    expect(lines.length).toBeLessThan(350);
  });

  it('every relative link in it and in docs/ to a Markdown page finds the page, and the heading its #anchor names', () => {
    let checked = 0;
    for (const { path, text } of userDocs()) {
      for (const link of relativeLinks(text)) {
        const [file = '', anchor] = link.split('#');
        if (file !== '' && !file.endsWith('.md')) continue;
        const target = file === '' ? path : normalize(join(dirname(path), file));
        checked += 1;
        expect(existsSync(join(ROOT, target)), `${path} links to ${link}: no file ${target}`).toBe(true);
        if (anchor) expect(headingAnchors(join(ROOT, target)), `${path} links to ${link}: ${target} has no heading with anchor #${anchor}`).toContain(anchor);
      }
    }
    expect(checked, 'the README links to its docs/ pages').toBeGreaterThan(20);
  });

  it('every `npx classroom-sync <command>` it and docs/ show is a command of the CLI', async () => {
    const help = await runCli(['--help'], { env: {} });
    const commands = new Set([...help.stdout.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!));
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(new Set([...readme.matchAll(/npx classroom-sync ([a-z][a-z-]*)/g)].map((m) => m[1]!)).size).toBeGreaterThan(5);
    for (const { path, text } of userDocs()) {
      const named = new Set([...text.matchAll(/npx classroom-sync ([a-z][a-z-]*)/g)].map((m) => m[1]!));
      for (const command of named) expect(commands, `${path} mentions \`npx classroom-sync ${command}\``).toContain(command);
    }
  });

  it("every command of the CLI has a row in the README's command table", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const table = readme.split(/^## Commands$/m)[1]?.split(/^## /m)[0] ?? '';
    const rows = new Set([...table.matchAll(/^\| `npx classroom-sync ([a-z][a-z-]*)/gm)].map((m) => m[1]!));
    const help = await runCli(['--help'], { env: {} });
    const commands = [...help.stdout.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
    expect(commands.length).toBeGreaterThan(5);
    for (const command of commands) expect(rows, `the Commands table has a row for \`${command}\``).toContain(command);
  });

  it('the quick start is two commands, runs only package.json scripts and options that exist, and its test command brings its own tools', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const lines = quickStartLines(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(lines, 'one line runs the demo, one runs the tests').toHaveLength(2);
    const commands = lines.flatMap((line) => line.split('&&').map((c) => c.trim()));
    expect(commands).toContain('npm test');
    for (const command of commands) {
      const npmScript = /^npm (start|test|run ([\w:-]+))(?: -- (.*))?$/.exec(command);
      if (command === 'npm ci') {
        expect(existsSync(join(ROOT, 'package-lock.json')), 'npm ci needs package-lock.json').toBe(true);
        // `npm start` runs the compiled dist/: the install itself must build it.
        expect(pkg.scripts.prepare, 'npm ci builds dist/ (prepare)').toBe('npm run build');
      } else if (npmScript) {
        const script = pkg.scripts[npmScript[2] ?? npmScript[1]!];
        expect(script, command).toBeDefined();
        if (npmScript[1] === 'test')
          expect(script, '`npm test` runs the inner loop: every unit and integration file').toBe('vitest run --project unit --project integration');
        await expectOptionsAccepted(script!, npmScript[3] ?? '');
      } else {
        expect.fail(`the quick start runs \`${command}\`, which this test does not know how to check against package.json`);
      }
    }
    // Chromium, promtool and redis-server are not npm packages: `npm test` installs them first
    // (pretest) where it may, and the quick start names the one line for everyone else.
    expect(pkg.scripts.pretest).toBe('tsx test/setup/install-tools.ts');
    // The full suite (docs/testing.md) is every project at full depth, with the same tools.
    expect(pkg.scripts['test:all']).toBe('TEST_DEPTH=full vitest run');
    expect(pkg.scripts['pretest:all']).toBe(pkg.scripts.pretest);
    expect(readFileSync(join(ROOT, 'test/setup/install-tools.ts'), 'utf8')).toContain('TEST_TOOL_PACKAGES');
    const section = readFileSync(join(ROOT, 'README.md'), 'utf8').split(/^## Quick start$/m)[1] ?? '';
    expect(section, 'the quick start says what a non-root user installs').toContain(`sudo ${INSTALL_TEST_TOOLS}`);
  });

  it('every `npm run <script>` it and docs/ name is a script in package.json', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const named = userDocs().flatMap(({ path, text }) => [...text.matchAll(/npm run ([\w:-]+)/g)].map((m) => ({ path, script: m[1]! })));
    expect(new Set(named.map((n) => n.script)).size).toBeGreaterThan(3);
    for (const { path, script } of named) expect(Object.keys(pkg.scripts), `${path} mentions \`npm run ${script}\``).toContain(script);
  });
});

/** The command lines of the first `sh` block under "## Quick start", comments dropped. */
function quickStartLines(readme: string): string[] {
  const section = readme.split(/^## Quick start$/m)[1]?.split(/^## /m)[0] ?? '';
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter(Boolean);
}

/** `node dist/cli/main.js demo` given `--once --count 3`: the CLI command lists each option. */
async function expectOptionsAccepted(script: string, args: string): Promise<void> {
  const options = args.split(/\s+/).filter((a) => a.startsWith('--'));
  if (options.length === 0) return;
  const command = /^node dist\/cli\/main\.js ([a-z-]+)$/.exec(script)?.[1];
  expect(command, `${script} is a classroom-sync command, so its options can be checked`).toBeDefined();
  const help = await runCli([command!, '--help'], { env: {} });
  for (const option of options) expect(help.stdout, `${command} ${option}`).toMatch(new RegExp(`^\\s+(?:-\\w, )?${option}\\b`, 'm'));
}
