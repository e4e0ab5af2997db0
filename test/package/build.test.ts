// `npm run build` in a checkout: package.json's bin (dist/cli/main.js) comes out executable, so
// `npx classroom-sync` (which runs the file itself) works after any rebuild or `npm pack`; tsc
// writes every file without the run bit. Built in a copy of the sources, not in this dist/, which
// other test files are running meanwhile.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.ts';

const run = promisify(execFile);
const checkout = mkdtempSync(join(tmpdir(), 'classroom-sync-build-'));
afterAll(() => rmSync(checkout, { recursive: true, force: true }));

describe('npm run build', () => {
  it("leaves package.json's bin executable, runnable by itself", { timeout: 240_000 }, async () => {
    // What the build reads; node_modules shared with this checkout.
    for (const path of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'scripts'])
      cpSync(join(ROOT, path), join(checkout, path), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'), 'dir');
    await run('npm', ['run', 'build'], { cwd: checkout, timeout: 230_000 });

    const pkg = JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
    expect(pkg.bin).toEqual({ 'classroom-sync': 'dist/cli/main.js' });
    const main = join(checkout, 'dist', 'cli', 'main.js');
    expect((statSync(main).mode & 0o777).toString(8)).toBe('755');
    const { stdout } = await run(main, ['--version'], { cwd: checkout, timeout: 60_000 });
    expect(stdout.trim()).toBe(pkg.version);
  });
});
