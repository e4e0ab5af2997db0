// The processes a benchmark measures or talks to, each started through the real CLI
// (`node scripts/dev-cli.mjs …`, the sources through tsx): a sandbox with its own clock and event loop, and workers.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SandboxState } from '../../src/sandbox/index.ts';

export const BIN = fileURLToPath(new URL('../../scripts/dev-cli.mjs', import.meta.url));

/** `classroom-sync sandbox` on a free loopback port, with the given fault flags. */
export interface SandboxProcess {
  url: string;
  pid: number;
  /** `GET /__sandbox/state?classes=false`. */
  state(): Promise<SandboxState>;
  stop(): Promise<void>;
}

export async function startSandboxProcess(flags: readonly string[], env: Record<string, string>): Promise<SandboxProcess> {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', '--host', '127.0.0.1', '--seed', '1', ...flags], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await firstMatch(child, /sandbox listening on (http:\/\/\S+)/, 'sandbox', 30_000);
  return {
    url,
    pid: child.pid!,
    async state() {
      const response = await fetch(`${url}/__sandbox/state?classes=false`);
      const body = (await response.json()) as { data: SandboxState };
      return body.data;
    },
    stop: () => stopChild(child),
  };
}

/** A `classroom-sync worker` process (`PORT=0`); resolves once it logged `worker started`. */
export interface WorkerChild {
  url: string;
  pid: number;
  /** SIGTERM (drains), SIGKILL after 30 s. */
  stop(): Promise<void>;
}

export async function startWorkerProcess(env: Record<string, string>): Promise<WorkerChild> {
  // BENCH_WORKER_PROFILE_DIR: every worker writes a CPU profile per thread there when it exits.
  const profileDir = process.env.BENCH_WORKER_PROFILE_DIR;
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const child = spawn(process.execPath, [...profile, BIN, 'worker'], {
    // `worker started` is an info line; it carries the URL a PORT=0 worker got.
    env: { ...process.env, ...env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: env.LOG_LEVEL === 'silent' ? 'info' : (env.LOG_LEVEL ?? 'info') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await firstMatch(child, /"msg":"worker started"/, 'worker', 60_000, (line) => (JSON.parse(line) as { url: string }).url);
  return { url, pid: child.pid!, stop: () => stopChild(child) };
}

/**
 * Reads the child's stdout until a line matches; resolves with the first capture group (or what
 * `pick` makes of the line). Keeps draining stdout afterwards so the child never blocks on a pipe.
 */
function firstMatch(child: ChildProcess, pattern: RegExp, what: string, timeoutMs: number, pick?: (line: string) => string): Promise<string> {
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-2_000);
  });
  return new Promise((resolve, reject) => {
    let buffer = '';
    let found = false;
    const timer = setTimeout(() => fail(new Error(`${what} did not start within ${timeoutMs} ms`)), timeoutMs);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${error.message}${stderr ? `\n${what} stderr: ${stderr}` : ''}`));
    };
    child.once('exit', (code) => {
      if (!found) fail(new Error(`${what} exited with ${code} before it was ready`));
    });
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      if (found) return;
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const match = pattern.exec(line);
        if (!match) continue;
        found = true;
        clearTimeout(timer);
        buffer = '';
        resolve(pick ? pick(line) : match[1]!);
        return;
      }
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

/** Sums of some series of a worker's `/metrics` (label sets added up), by metric name. */
export async function scrapeSums(url: string, names: readonly string[]): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sums: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (match && match[1]! in sums) sums[match[1]!]! += Number(match[2]);
  }
  return sums;
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); undefined elsewhere. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    return cpuTicksOf(readFileSync(`/proc/${pid}/stat`, 'utf8')) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds so far of one process's threads whose nice value is `nice` (the worker's delivery
 * thread runs at 19, everything else at 0), or of its main thread (`'main'`); Linux only.
 */
export function threadCpuSeconds(pid: number, which: 'main' | { nice: number }): number | undefined {
  const stats = statsUnder(`/proc/${pid}/task`);
  if (!stats) return undefined;
  let ticks = 0;
  for (const [tid, stat] of stats) {
    // Field 19 is the nice value.
    if (which === 'main' ? tid === String(pid) : Number(fieldsOf(stat)[16]) === which.nice) ticks += cpuTicksOf(stat);
  }
  return ticks / CLOCK_TICKS;
}

/** CPU seconds so far of every process named `command` (e.g. every PostgreSQL backend); Linux only. */
export function commandCpuSeconds(command: string): number | undefined {
  const stats = statsUnder('/proc');
  if (!stats) return undefined;
  let ticks = 0;
  for (const [, stat] of stats) if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === command) ticks += cpuTicksOf(stat);
  return ticks / CLOCK_TICKS;
}

/** The stat line of each numbered entry of `dir` (/proc or /proc/PID/task), by its number; undefined if `dir` cannot be read. */
function statsUnder(dir: string): [string, string][] | undefined {
  let entries: string[];
  try {
    entries = readdirSync(dir).filter((entry) => /^\d+$/.test(entry));
  } catch {
    return undefined;
  }
  const stats: [string, string][] = [];
  for (const entry of entries) {
    try {
      stats.push([entry, readFileSync(`${dir}/${entry}/stat`, 'utf8')]);
    } catch {
      // It ended since the listing.
    }
  }
  return stats;
}

/** The fields of a stat line after the command name (which may contain spaces): field 3 onwards. */
function fieldsOf(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime + stime of one stat line (fields 14 and 15), in clock ticks. */
function cpuTicksOf(stat: string): number {
  const fields = fieldsOf(stat);
  return Number(fields[11]) + Number(fields[12]);
}

/** Busy and total CPU time of the whole machine so far, from /proc/stat (Linux); undefined elsewhere. */
export function machineCpuSeconds(): { busy: number; total: number } | undefined {
  try {
    const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = values.map(Number) as number[];
    const busy = user! + nice! + system! + irq! + softirq! + steal!;
    return { busy: busy / CLOCK_TICKS, total: (busy + idle! + iowait!) / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}

/** USER_HZ: 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;
