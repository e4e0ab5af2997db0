// Worker processes started ahead of need. A `classroom-sync worker` spends most of its start loading
// its modules: about 1.5 s alone, 5–10 s for three at once on two busy cores, and a suite that has
// just killed its whole fleet has no worker at all meanwhile. A standby (standby.mjs) does that
// loading ahead, then waits until taken, holding no connection and no job; taken, it is the worker a
// cold spawn would have been from the CLI's first line on (configuration, migrations, connections,
// jobs), only sooner. Its modules are loaded before the CLI's own first lines, which start tracing
// when OTEL_* variables ask for it: an environment that does gets cold spawns.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BIN } from '../helpers/cli.ts';

const PRELOAD = fileURLToPath(new URL('./standby.mjs', import.meta.url));

type Output = 'pipe' | 'ignore' | 'inherit';

export interface StandbyOptions {
  /** How many to keep ready. */
  ready: number;
  /**
   * How many standbys to start in all (default: no limit); a take past them starts a process cold. A
   * standby loading modules that no one will take only takes a core from the workers that run.
   */
  total?: number;
  /** The processes' stdout and stderr (default: both piped). */
  output?: readonly [Output, Output];
}

export class Standbys {
  private readonly ready: ChildProcess[] = [];
  private readonly output: readonly [Output, Output];
  private started = 0;
  private closed = false;

  /**
   * Keeps standbys of `classroom-sync worker` ready. `env` is read at every spawn and every take, so
   * it may be completed (a server's URL) after this is made: a taken standby runs with the
   * environment as it is then.
   */
  constructor(
    private readonly env: Record<string, string>,
    private readonly options: StandbyOptions,
  ) {
    this.output = options.output ?? ['pipe', 'pipe'];
    this.fill();
  }

  /** A `classroom-sync worker` process that runs from now on: a standby taken (and replaced), or a cold spawn. */
  take(): ChildProcess {
    if (this.closed || tracing(this.env)) {
      this.started += 1;
      return spawn(process.execPath, [BIN, 'worker'], this.spawnOptions('ignore'));
    }
    let child = this.ready.shift();
    while (child && (child.exitCode !== null || child.signalCode !== null)) child = this.ready.shift();
    child ??= this.spawn();
    child.stdin!.end(`${JSON.stringify(this.env)}\n`);
    this.fill();
    return child;
  }

  /** Kills the standbys not taken; returns once they have exited. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.ready.splice(0).map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        return exited;
      }),
    );
  }

  private fill(): void {
    const total = this.options.total ?? Number.POSITIVE_INFINITY;
    while (!this.closed && !tracing(this.env) && this.ready.length < this.options.ready && this.started < total) this.ready.push(this.spawn());
  }

  private spawn(): ChildProcess {
    this.started += 1;
    const child = spawn(process.execPath, ['--import', PRELOAD, BIN, 'worker'], this.spawnOptions('pipe'));
    // A failed spawn shows as a process that exited: take() passes over it.
    child.on('error', () => {});
    return child;
  }

  private spawnOptions(stdin: 'pipe' | 'ignore') {
    return { env: { ...process.env, ...this.env }, stdio: [stdin, ...this.output] as [typeof stdin, Output, Output] };
  }
}

function tracing(env: Record<string, string>): boolean {
  return Object.keys({ ...process.env, ...env }).some((key) => key.startsWith('OTEL_'));
}
