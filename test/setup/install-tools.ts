// `npm test`'s pretest step: the suite needs two programs npm cannot bring, Chromium (the
// dashboard's browser test) and promtool (alert rules, Grafana queries, the /metrics format). Where
// either is missing and the machine can install Debian packages (root, or password-less sudo), this
// installs both, once, so the README's `npm test` passes on a fresh machine as written. Anywhere
// else it says in one line what to install and lets the suite run: the tests that need a missing
// program then fail with that same line (never a skip that would hide them in CI).
import { spawnSync } from 'node:child_process';
import { MissingToolError, TEST_TOOL_PACKAGES, chromiumPath, promtoolPath } from '../helpers/tools.ts';

function missingTools(): string[] {
  const missing: string[] = [];
  for (const find of [chromiumPath, promtoolPath]) {
    try {
      find();
    } catch (error) {
      if (!(error instanceof MissingToolError)) throw error;
      missing.push(error.message);
    }
  }
  return missing;
}

/** `[]` as root, `['sudo', '-n']` where sudo needs no password, undefined where we may not install. */
function privilege(): string[] | undefined {
  if (spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined;
  if (process.getuid?.() === 0) return [];
  return spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0 ? ['sudo', '-n'] : undefined;
}

function run(command: string[]): boolean {
  const [program, ...args] = command;
  const result = spawnSync(program!, args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return result.status === 0;
}

const missing = missingTools();
if (missing.length > 0) {
  const prefix = privilege();
  const install = ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...TEST_TOOL_PACKAGES];
  if (!prefix) {
    console.warn(`pretest: ${missing.join('; ')}. Their tests will fail until then.`);
  } else {
    console.log(`pretest: installing the Debian packages ${TEST_TOOL_PACKAGES.join(' and ')} for the browser and promtool tests (once)…`);
    const ok = run([...prefix, 'apt-get', 'update', '-qq']) && run([...prefix, ...install]);
    const still = missingTools();
    if (!ok || still.length > 0) console.warn(`pretest: could not install them (${still.join('; ') || 'apt-get failed'}). Their tests will fail until then.`);
  }
}
