// Runs the real CLI (`node dist/cli/main.js …`, the compiled package's bin, which test/setup/global.ts
// keeps up to date with src/; or `npm start`) as a child process, the way a user does. Every child
// runs in its own process group so that it, and anything it started (npm → sh → node), can always
// be killed; `killAllChildren()` belongs in every such test file's teardown (`defer(killAllChildren)` with useHarness).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The package's bin, compiled: it starts in a fraction of the time the sources take through tsx. */
export const BIN = join(ROOT, 'dist', 'cli', 'main.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** The child's whole environment besides PATH and HOME: nothing else leaks in from the test runner. */
  env?: Record<string, string>;
  /** Default: an empty temporary directory, so no stray `.env` is picked up. */
  cwd?: string;
  stdin?: string;
  timeoutMs?: number;
  /** Run `npm <args>` in the repository instead of the bin script. */
  npm?: boolean;
  /** Run this command with the args instead of the bin script (e.g. `['npx', 'classroom-sync']` in an installing project). */
  command?: readonly [string, ...string[]];
}

const running = new Set<ChildProcess>();
const scratch: string[] = [];

export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return startCli(args, options).result;
}

export interface RunningCli {
  /** Output so far. */
  stdout(): string;
  /** Resolves with the first match of `pattern` in stdout; rejects if the process ends first. */
  waitForOutput(pattern: RegExp, what: string): Promise<RegExpMatchArray>;
  /** Signals the whole process group. */
  signal(signal: NodeJS.Signals): void;
  result: Promise<CliResult>;
}

/** Starts the CLI and returns at once, for commands that keep running (demo without --once). */
export function startCli(args: string[], options: CliOptions = {}): RunningCli {
  const cwd = options.cwd ?? (options.npm ? ROOT : scratchDir());
  const [command, argv] = options.command
    ? [options.command[0], [...options.command.slice(1), ...args]]
    : options.npm
      ? ['npm', args]
      : [process.execPath, [BIN, ...args]];
  const child = spawn(command, argv, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...options.env },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  const watchers = new Set<() => void>();
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
    for (const watcher of watchers) watcher();
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin!.end(options.stdin ?? '');
  const timeoutMs = options.timeoutMs ?? 45_000;
  const result = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup(child);
      reject(new Error(`${command} ${argv.join(' ')} did not finish in ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      running.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return {
    stdout: () => stdout,
    waitForOutput(pattern, what) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(stdout);
          if (match) {
            watchers.delete(check);
            resolve(match);
          }
        };
        watchers.add(check);
        check();
        result.then(
          () => (watchers.has(check) ? reject(new Error(`process ended before ${what}\nstdout:\n${stdout}\nstderr:\n${stderr}`)) : undefined),
          reject,
        );
      });
    },
    signal(signal) {
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, signal);
    },
    result,
  };
}

/** A fresh empty directory, removed by killAllChildren(). */
export function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'classroom-sync-cli-'));
  scratch.push(dir);
  return dir;
}

export function killAllChildren(): void {
  for (const child of running) killGroup(child);
  running.clear();
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}
