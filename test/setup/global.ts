// vitest's global setup: the CLI tests and the worker processes run the compiled CLI (dist/), which
// starts in a fraction of the time the sources take through tsx. So that one file run by hand
// (`npx vitest run test/…`) never tests yesterday's build, dist/ is rebuilt here whenever a file
// under src/ is newer than it.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUILT = join(ROOT, 'dist', 'cli', 'main.js');

function newestSource(): number {
  let newest = 0;
  for (const entry of readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

function builtAt(): number {
  try {
    return statSync(BUILT).mtimeMs;
  } catch {
    return 0;
  }
}

export default function setup(): void {
  if (builtAt() >= newestSource()) return;
  console.log('dist/ is older than src/: building it (npm run build) before the tests run the CLI');
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
}
