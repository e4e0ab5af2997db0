// Child processes for the fault suite: a private Redis that can be killed and restarted empty,
// and worker processes that can be SIGKILLed at any moment.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { redisSpawnError, requireRedisPrograms } from '../helpers/tools.ts';

const BIN = fileURLToPath(new URL('../../bin/classroom-sync.js', import.meta.url));

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
  readonly exited: Promise<number | null>;

  constructor(env: Record<string, string>, onLine: (line: WorkerLine) => void) {
    this.child = spawn(process.execPath, [BIN, 'worker'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.buffer += chunk;
      for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
        const text = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        try {
          onLine(JSON.parse(text) as WorkerLine);
        } catch {
          // not a log line
        }
      }
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2_000);
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill9(): void {
    this.stoppedByUs = true;
    if (this.alive) this.child.kill('SIGKILL');
  }

  async stop(timeoutMs = 15_000): Promise<number | null> {
    if (!this.alive) return this.child.exitCode;
    this.stoppedByUs = true;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.kill9(), timeoutMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}
