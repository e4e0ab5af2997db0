// `npm test`'s pretest step: the suite needs programs npm cannot bring, Chromium (the dashboard's
// browser test), promtool (alert rules, Grafana queries, the /metrics format) and redis-server with
// redis-cli (the fault suite and the cluster tests start Redis servers of their own). Where any is
// missing and the machine can install Debian packages (root, or password-less sudo), this installs
// them, once, so the README's `npm test` passes on a fresh machine as written. Anywhere else it says
// in one line what to install and lets the suite run: the tests that need a missing program then
// fail with that same line (never a skip that would hide them in CI).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { MissingToolError, TEST_TOOL_PACKAGES, chromiumPath, promtoolPath, requireRedisPrograms } from '../helpers/tools.ts';

// Debian's maintainer scripts ask this file whether they may start a service; 101 means "no".
const POLICY_RC_D = '/usr/sbin/policy-rc.d';

function missingTools(): string[] {
  const missing: string[] = [];
  for (const find of [chromiumPath, promtoolPath, requireRedisPrograms]) {
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

/**
 * Installs the packages without starting their services: the tests only need the programs (they
 * start their own Redis servers on free ports), and a redis-server or prometheus service left
 * running would hold ports 6379 and 9090 on the developer's machine. A policy-rc.d already there is
 * left alone; ours is removed afterwards.
 */
function installWithoutServices(prefix: string[]): boolean {
  const ours = !existsSync(POLICY_RC_D) && run([...prefix, 'sh', '-c', `printf '#!/bin/sh\\nexit 101\\n' > ${POLICY_RC_D} && chmod 755 ${POLICY_RC_D}`]);
  try {
    const install = ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...TEST_TOOL_PACKAGES];
    return run([...prefix, 'apt-get', 'update', '-qq']) && run([...prefix, ...install]);
  } finally {
    if (ours) run([...prefix, 'rm', '-f', POLICY_RC_D]);
  }
}

const missing = missingTools();
if (missing.length > 0) {
  const prefix = privilege();
  if (!prefix) {
    console.warn(`pretest: ${missing.join('; ')}. Their tests will fail until then.`);
  } else {
    console.log(`pretest: installing the Debian packages ${TEST_TOOL_PACKAGES.join(', ')} for the browser, promtool and Redis-process tests (once)…`);
    const ok = installWithoutServices(prefix);
    const still = missingTools();
    if (!ok || still.length > 0) console.warn(`pretest: could not install them (${still.join('; ') || 'apt-get failed'}). Their tests will fail until then.`);
  }
}
