// Programs some tests need besides Node.js, PostgreSQL and a running Redis: Chromium (the dashboard's
// browser test), promtool (alert rules, Grafana queries, the /metrics format), and redis-server with
// redis-cli (the fault suite and the cluster tests start Redis servers of their own, which a Redis
// reached over the network cannot stand in for). None comes from npm; all are Debian packages, which `npm test` installs before the suite where it may (its pretest
// step, test/setup/install-tools.ts). A missing one fails its tests with one line naming the fix:
// never a skip, which would hide them in CI.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The Debian packages that bring them (promtool comes with prometheus, redis-cli with redis-server). */
export const TEST_TOOL_PACKAGES = ['chromium', 'prometheus', 'redis-server'] as const;

/** What to run by hand where `npm test` may not install packages itself. */
export const INSTALL_TEST_TOOLS = `apt-get install -y ${TEST_TOOL_PACKAGES.join(' ')}`;

/** Thrown when a program a test needs is not installed. Its stack is its one line: nothing else helps. */
export class MissingToolError extends Error {
  override readonly name = 'MissingToolError';
  constructor(message: string) {
    super(message);
    this.stack = `${this.name}: ${message}`;
  }
}

/** Chromium for Playwright: CHROMIUM_PATH, else `chromium` or `chromium-browser` on PATH. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env.CHROMIUM_PATH;
  if (chosen) {
    if (isExecutable(chosen)) return chosen;
    throw new MissingToolError(
      `CHROMIUM_PATH=${chosen} is not an executable file: point it at a Chromium or Chrome binary, or unset it to use \`chromium\` from PATH`,
    );
  }
  const found = onPath(['chromium', 'chromium-browser'], env.PATH ?? '');
  if (found) return found;
  throw new MissingToolError(
    `Chromium is not installed (no chromium or chromium-browser on PATH): run \`${INSTALL_TEST_TOOLS}\` as root (docs/testing.md), or set CHROMIUM_PATH to a Chromium or Chrome binary`,
  );
}

/** promtool: PROMTOOL, else `promtool` on PATH. */
export function promtoolPath(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env.PROMTOOL;
  if (chosen) {
    if (isExecutable(chosen) || onPath([chosen], env.PATH ?? '')) return chosen;
    throw new MissingToolError(`PROMTOOL=${chosen} is not an executable file: point it at promtool, or unset it to use \`promtool\` from PATH`);
  }
  if (onPath(['promtool'], env.PATH ?? '')) return 'promtool';
  throw new MissingToolError(
    `promtool is not installed (not on PATH): run \`${INSTALL_TEST_TOOLS}\` as root (docs/testing.md; promtool comes with Debian's prometheus), or set PROMTOOL to a promtool binary`,
  );
}

/** The Redis programs the fault suite and the cluster tests spawn, checked before they spawn them. */
export const REDIS_PROGRAMS = ['redis-server', 'redis-cli'] as const;

/** Throws the one-line fix when redis-server or redis-cli is not on PATH. */
export function requireRedisPrograms(env: NodeJS.ProcessEnv = process.env): void {
  const missing = REDIS_PROGRAMS.find((program) => !onPath([program], env.PATH ?? ''));
  if (missing) throw new MissingToolError(redisMissing(missing));
}

/**
 * What a failed spawn of a Redis program means to a test: not installed (ENOENT) becomes the one
 * line that names the fix; anything else is passed on as it is.
 */
export function redisSpawnError(program: string, error: NodeJS.ErrnoException): Error {
  return error.code === 'ENOENT' ? new MissingToolError(redisMissing(program)) : error;
}

function redisMissing(program: string): string {
  return `${program} is not installed (not on PATH): run \`${INSTALL_TEST_TOOLS}\` as root (docs/testing.md; the tests start their own Redis servers from it, no service needed)`;
}

function onPath(names: readonly string[], path: string): string | undefined {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    for (const name of names) {
      const candidate = join(dir, name);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

/** A regular file this process may execute. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
