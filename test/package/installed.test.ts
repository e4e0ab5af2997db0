// The package as an integrator gets it: `npm pack` of a copy of the repository without dist/ (so
// `prepare` must build it), `npm install` of the tarball into a new project, then plain `node`:
// the library imported and used against the real PostgreSQL and Redis, `npx classroom-sync`
// migrating, reporting and running a worker that syncs the batch (its webhook thread included),
// and TypeScript checking a consumer file against the shipped .d.ts.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilSynced } from '../helpers/batches.ts';
import { ROOT, killAllChildren, runCli, startCli } from '../helpers/cli.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h, defer } = useHarness();
defer(killAllChildren);

const work = mkdtempSync(join(tmpdir(), 'classroom-sync-package-'));
const consumer = join(work, 'consumer');
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs a command to completion; rejects with its output when it fails. */
function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env: { ...process.env, ...env }, timeout: 240_000, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`)) : resolve({ stdout, stderr }),
    );
  });
}

/** The error lines of a type-check (tsc exits non-zero when there is any). */
function typeErrors(command: string, args: string[], cwd: string): Promise<string[]> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, timeout: 240_000, maxBuffer: 64 << 20 }, (_error, stdout) =>
      resolve(stdout.split('\n').filter((line) => /^\S+\(\d+,\d+\): error /.test(line))),
    );
  });
}

/** The files git knows (tracked, or new and not ignored), copied as a fresh clone would hold them: no dist/. */
async function copyOfRepository(to: string): Promise<void> {
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], ROOT);
  for (const file of stdout.split('\0').filter(Boolean)) {
    if (file.startsWith('dist/')) continue;
    try {
      cpSync(join(ROOT, file), join(to, file));
    } catch (error) {
      // A file deleted in the working tree but still in the index.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  // The build's tools (TypeScript), without a second install.
  symlinkSync(join(ROOT, 'node_modules'), join(to, 'node_modules'), 'dir');
}

beforeAll(async () => {
  const clone = join(work, 'clone');
  await copyOfRepository(clone);
  await run('npm', ['pack', '--pack-destination', work], clone);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  expect(tarball, 'npm pack made a tarball').toBeDefined();
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(work, tarball!)], consumer);
}, 300_000);

const npx = ['npx', '--no-install', 'classroom-sync'] as const;

describe('the packed package, installed in a new project', () => {
  it('imports under plain node: publishes a batch through the library and reads it back', async () => {
    writeFileSync(
      join(consumer, 'publish.mjs'),
      `import { createClassroomSync, loadConfig, InvalidEventError, TERMINAL_STATES } from 'classroom-sync';
const sync = createClassroomSync(loadConfig());
try {
  await sync.publishBatchCreated({ batchId: 'pkg-1', name: 'From the package', subject: 'Maths' });
  let refused = '';
  try { await sync.publishBatchCreated({ batchId: 'pkg-2', subject: 'Maths' }); } catch (e) { if (e instanceof InvalidEventError) refused = e.problems[0].field; }
  const batch = await sync.getBatch('pkg-1');
  console.log(JSON.stringify({ state: batch?.state, refused, terminal: TERMINAL_STATES.includes('synced') }));
} finally {
  await sync.close();
}
`,
    );
    const { stdout } = await run(process.execPath, ['publish.mjs'], consumer, h.env);
    expect(JSON.parse(stdout)).toEqual({ state: 'pending', refused: 'name', terminal: true });
  });

  it('runs its CLI with npx: --version, migrate, status, and a worker that syncs the batch', async () => {
    const version = await runCli(['--version'], { command: npx, cwd: consumer });
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    // The migrations ship with the package; the database is already at the newest, so nothing changes.
    const migrate = await runCli(['migrate'], { command: npx, cwd: consumer, env: h.env });
    expect(migrate.code, migrate.stderr).toBe(0);
    const before = await runCli(['status', 'pkg-1', '--json'], { command: npx, cwd: consumer, env: h.env });
    expect(JSON.parse(before.stdout)).toMatchObject({ batchId: 'pkg-1' });
    // The bin itself (its shebang, plain node) rather than npx: npm would report the SIGTERM as its own exit.
    const bin = join(consumer, 'node_modules', '.bin', 'classroom-sync');
    const worker = startCli(['worker'], { command: [bin], cwd: consumer, env: { ...h.env, PORT: '0' } });
    const row = await untilSynced(h, 'pkg-1');
    expect(row.classId).toMatch(/^[0-9a-f]{24}$/);
    worker.signal('SIGTERM');
    const ended = await worker.result;
    expect(ended.code, ended.stderr).toBe(0);
    // Nothing on stderr: no deprecation warning from a dependency the consumer resolved afresh.
    expect(ended.stderr).toBe('');
  });

  it('type-checks a consumer file against the shipped .d.ts, and its types are not `any`', async () => {
    writeFileSync(
      join(consumer, 'consumer.ts'),
      `import { type BatchView, type ClassroomSync, createClassroomSync, isClassroomError, loadConfig } from 'classroom-sync';

export async function publishOne(sync: ClassroomSync, batchId: string): Promise<BatchView | undefined> {
  await sync.publishBatchCreated({ batchId, name: 'Typed', subject: 'Maths' });
  const view = await sync.getBatch(batchId);
  const state: string | undefined = view?.state;
  return state === undefined ? undefined : view;
}

export const make = (): ClassroomSync => createClassroomSync(loadConfig());
export const classify = (error: unknown): boolean => isClassroomError(error);

// @ts-expect-error batchId is a string: the check fails here only if the shipped types are real
export const wrong = (sync: ClassroomSync) => sync.publishBatchCreated({ batchId: 42, name: 'x', subject: 'y' });
`,
    );
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules', '@types')],
        },
        files: ['consumer.ts'],
      }),
    );
    // Libraries' own .d.ts are checked too (no skipLibCheck), so a type the package's declarations
    // name but do not bring (a missing @types package) is an error; errors inside other packages'
    // declarations (drizzle-orm's for databases the package does not use) are theirs.
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const errors = await typeErrors(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], consumer);
    const ours = errors.filter((line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/classroom-sync/'));
    expect(ours).toEqual([]);
  });
});
