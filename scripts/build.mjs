// `npm run build` (and `prepare`, so `npm ci`, an install from git and `npm pack` build too):
// compiles src/ to dist/ (ES modules, .d.ts, source maps) from a clean folder, copies the files of
// src/ TypeScript does not compile (the webhook thread's plain-JavaScript first module), and makes
// package.json's bin executable: tsc writes files without the run bit, and a checkout's
// `npx classroom-sync` runs the file itself.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const src = join(root, 'src');
const dist = join(root, 'dist');

// A file removed from src/ must not live on in dist/.
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(dist, relative(src, from)));
}

const { bin } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const file of Object.values(bin ?? {})) chmodSync(join(root, file), 0o755);
