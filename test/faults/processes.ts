// Child processes for the fault suite: a private Redis that can be killed and restarted empty, a
// private PostgreSQL that can be restarted mid-run, and worker processes that can be SIGKILLed at
// any moment.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { MissingToolError, isExecutable, redisSpawnError, requireRedisPrograms } from '../helpers/tools.ts';
import { BIN } from '../helpers/cli.ts';
import type { Standbys } from './standbys.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A redis-server of our own, without persistence: a restart loses every key, as on these machines. */
export class PrivateRedis {
  private child: ChildProcess | undefined;
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    requireRedisPrograms();
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'],
      {
        stdio: 'ignore',
      },
    );
    // Without a handler a failed spawn is an uncaught 'error' that kills the test file with a stack.
    let failed: Error | undefined;
    this.child.on('error', (error) => {
      failed = redisSpawnError('redis-server', error);
    });
    const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    for (let i = 0; i < 100; i++) {
      if (failed) throw failed;
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error(`private redis-server on port ${this.port} did not start`);
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async restartEmpty(): Promise<void> {
    await this.kill();
    await this.start();
  }
}

/** What to run where PostgreSQL's server programs (initdb, postgres) are missing. */
const INSTALL_POSTGRES = 'apt-get install postgresql';

/**
 * A PostgreSQL server of our own (a fresh cluster in a temporary directory, on its own port), so the
 * suite can stop and start it without touching the machine's shared server. Tuned for a test, not
 * for safety: no fsync, no synchronous commit, no full-page writes.
 */
export class PrivatePostgres {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private dir: string | undefined;
  /** The last 2 kB the server wrote to stderr (its log): why it did not start, when it did not. */
  private stderrTail = '';

  constructor(readonly port: number) {}

  /** The server, without a database: append `/<name>`. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}`;
  }

  /** Creates the cluster on the first start, then starts the server; returns once it accepts connections. */
  async start(): Promise<void> {
    if (this.child) return;
    const bin = postgresBinDir();
    const owner = postgresOwner();
    if (!this.dir) {
      this.dir = mkdtempSync(join(tmpdir(), 'classroom-sync-pg-'));
      if (owner) chownSync(this.dir, owner.uid, owner.gid);
    }
    const data = join(this.dir, 'data');
    if (!existsSync(join(data, 'PG_VERSION'))) {
      await runProgram(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C'], this.dir, owner);
    }
    this.stderrTail = '';
    const child = spawn(
      join(bin, 'postgres'),
      [
        ...['-D', data, '-p', String(this.port), '-k', this.dir, '-h', '127.0.0.1'],
        ...['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'],
      ],
      { cwd: this.dir, env: { ...process.env, HOME: this.dir }, stdio: ['ignore', 'ignore', 'pipe'], ...owner },
    );
    this.child = child;
    let failed: Error | undefined;
    child.on('error', (error) => {
      failed = postgresSpawnError('postgres', error);
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2_000);
    });
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (failed) {
        this.child = undefined;
        throw failed;
      }
      if (child.exitCode !== null || child.signalCode !== null) {
        this.child = undefined;
        throw new Error(`private postgres on port ${this.port} exited (${child.exitCode ?? child.signalCode}) while starting: ${this.stderrTail.trim()}`);
      }
      if (await accepts(this.url)) return;
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`private postgres on port ${this.port} did not accept connections within 30 s: ${this.stderrTail.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Fast shutdown (SIGINT: every session is ended, nothing waits for clients); returns once it has exited. */
  async stop(): Promise<void> {
    const child = this.child;
    const exited = this.exited;
    if (!child || !exited) return;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      // A fast shutdown takes well under a second; past 20 s, immediate shutdown, then no more asking.
      const quit = setTimeout(() => child.kill('SIGQUIT'), 20_000);
      const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(quit);
      clearTimeout(kill);
    } else {
      await exited;
    }
    this.child = undefined;
    this.exited = undefined;
  }

  /** Stops the server, keeps it down `downMs` (connections are refused), starts it again on the same data and port. */
  async restart(downMs: number): Promise<void> {
    await this.stop();
    await new Promise((r) => setTimeout(r, downMs));
    await this.start();
  }

  /** Stops the server and removes its cluster. */
  async destroy(): Promise<void> {
    try {
      await this.stop();
    } finally {
      if (this.dir) rmSync(this.dir, { recursive: true, force: true });
      this.dir = undefined;
    }
  }
}

/** True when a new connection to `url` is accepted and answers (false while starting, refused or down). */
async function accepts(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: `${url}/postgres`, connectionTimeoutMillis: 2_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The directory of initdb and postgres: `pg_config --bindir` when it has both, else the newest
 * /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH), else PATH.
 */
function postgresBinDir(): string {
  const candidates: string[] = [];
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // no pg_config (it comes with libpq-dev, which the server does not need)
  }
  try {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => `/usr/lib/postgresql/${v}/bin`));
  } catch {
    // no Debian PostgreSQL
  }
  candidates.push(...(process.env.PATH ?? '').split(delimiter).filter(Boolean));
  const found = candidates.find((dir) => dir && isExecutable(join(dir, 'initdb')) && isExecutable(join(dir, 'postgres')));
  if (found) return found;
  throw new MissingToolError(postgresMissing('initdb and postgres'));
}

/**
 * initdb and postgres refuse to run as root: as root, they run as the `postgres` OS user (which the
 * Debian package creates); otherwise as the current user (undefined).
 */
function postgresOwner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new MissingToolError(
      `there is no \`postgres\` OS user to run initdb and postgres as (they refuse to run as root): run \`${INSTALL_POSTGRES}\` as root, which creates it, or run the tests as another user`,
    );
  }
}

/** Runs initdb (as `owner`) to its end; fails with its output when it fails. */
function runProgram(file: string, args: string[], cwd: string, owner: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env: { ...process.env, HOME: cwd }, stdio: ['ignore', 'pipe', 'pipe'], ...owner });
    let output = '';
    const collect = (chunk: string) => {
      output = (output + chunk).slice(-2_000);
    };
    child.stdout!.setEncoding('utf8').on('data', collect);
    child.stderr!.setEncoding('utf8').on('data', collect);
    child.on('error', (error) => reject(postgresSpawnError(file, error)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${file} ${args.join(' ')} failed (${code ?? signal}): ${output.trim()}`));
    });
  });
}

/** A spawn that failed because the program is missing (ENOENT) becomes the one line naming the fix. */
function postgresSpawnError(program: string, error: NodeJS.ErrnoException): Error {
  return error.code === 'ENOENT' ? new MissingToolError(postgresMissing(program)) : error;
}

function postgresMissing(program: string): string {
  return `PostgreSQL's server programs (${program}) are not installed (not in \`pg_config --bindir\`, /usr/lib/postgresql/<version>/bin or PATH): run \`${INSTALL_POSTGRES}\` as root (the fault suite starts a PostgreSQL server of its own from it, no service needed)`;
}

export interface WorkerLine {
  msg?: string;
  decision?: string;
  err?: { kind?: string; operation?: string };
  breaker?: string;
  [key: string]: unknown;
}

/** A `classroom-sync worker` process; its JSON log lines are collected for the report. */
export class WorkerProcess {
  private child: ChildProcess;
  private buffer = '';
  /** The last 2 kB the process wrote to stderr (why it died, when it died on its own). */
  stderrTail = '';
  /** True once the suite itself killed or stopped it; any other exit is a crash. */
  stoppedByUs = false;
  /** True once it logged 'worker started': past its migrations, syncing. */
  started = false;
  /** When it exited (epoch ms), once it has. */
  exitedAt: number | undefined;
  private killed = false;
  readonly exited: Promise<number | null>;

  /** Spawns `classroom-sync worker` with `env`, or takes one of `standbys` (made with stdout and stderr piped). */
  constructor(env: Record<string, string>, onLine: (line: WorkerLine) => void, standbys?: Standbys) {
    this.child = standbys ? standbys.take() : spawn(process.execPath, [BIN, 'worker'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.buffer += chunk;
      for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
        const text = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        try {
          const line = JSON.parse(text) as WorkerLine;
          if (line.msg === 'worker started') this.started = true;
          onLine(line);
        } catch {
          // not a log line
        }
      }
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2_000);
    });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        this.exitedAt = Date.now();
        resolve(code);
      }),
    );
  }

  /**
   * Running and not SIGKILLed by the suite. A killed process is not alive from the kill on, before its
   * exit is seen: else a respawn right after a kill would count the dying and start no one.
   */
  get alive(): boolean {
    return !this.killed && this.running;
  }

  private get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill9(): void {
    this.stoppedByUs = true;
    this.killed = true;
    if (this.running) this.child.kill('SIGKILL');
  }

  async stop(timeoutMs = 15_000): Promise<number | null> {
    if (!this.running) return this.child.exitCode;
    this.stoppedByUs = true;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.kill9(), timeoutMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}
