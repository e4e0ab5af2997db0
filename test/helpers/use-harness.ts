// The one way a test file sets up: a harness (own database, queue prefix and sandbox), and whatever
// else the file opens on it, each closed at teardown newest first, the harness last.
//
//   const { h } = useHarness();                      // beforeAll: createHarness; afterAll: close
//   const { h, worker } = useHarnessWithWorker();    // plus one sync worker on h.runtime
//   const each = useHarnessPerTest();                // a harness per test: `await each.harness()`
//
// `h` and `worker` are stand-ins, valid from beforeAll to afterAll: read them in hooks and tests.
// Teardown fails the file (or the test) when something was left open: a BullMQ worker still
// consuming the harness's queue, or a connection to its database that the harness did not make.
// Whatever was left open is still closed or dropped, so one leak does not hang the run.
import pg from 'pg';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { Config } from '../../src/config/config.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { type Runtime, createRuntime } from '../../src/runtime/runtime.ts';
import type { SandboxOptions } from '../../src/sandbox/index.ts';
import { type SyncWorker, type SyncWorkerOptions, createSyncWorker } from '../../src/sync/sync-worker.ts';
import { type Harness, PG_SERVER, createHarness } from './harness.ts';
import { standIn } from './stand-in.ts';

export interface HarnessOptions {
  /** Settings over FAST_SYNC (createHarness's first argument). */
  env?: Record<string, string>;
  /** Sandbox options over those the settings imply (createHarness's second argument). */
  sandbox?: Partial<SandboxOptions>;
  /** False: start nothing (the file's tests fail on their own terms, e.g. a missing browser). */
  enabled?: boolean;
}

/** What a scope closes at teardown. Closures, so they may be destructured. */
export interface Scope {
  /** Runs `close` at teardown, before everything registered earlier and before the harness. */
  defer(close: () => unknown): void;
  /** A sync worker (autoSweep off unless `options` say otherwise), closed at teardown. */
  syncWorker(runtime: Runtime, options?: SyncWorkerOptions): SyncWorker;
  /** Another runtime on `config` (a second worker process's), silent, closed at teardown. */
  runtime(config: Config): Runtime;
}

export interface HarnessScope extends Scope {
  /** The file's harness. Closed by teardown only: `h.close()` throws. */
  readonly h: Harness;
}

export interface HarnessWithWorkerScope extends HarnessScope {
  /** A sync worker on `h.runtime`, created in beforeAll, closed (5 s grace) before the harness. */
  readonly worker: SyncWorker;
}

export interface PerTestScope extends Scope {
  /** A harness of the running test's own, closed after the test (last, after what was deferred). */
  harness(options?: Omit<HarnessOptions, 'enabled'>): Promise<Harness>;
}

/** A harness for the file (or the describe block it is called in). */
export function useHarness(options: HarnessOptions = {}): HarnessScope {
  const teardown = new Teardown();
  let current: Harness | undefined;
  beforeAll(async () => {
    if (options.enabled === false) return;
    current = await teardown.harness(options);
  });
  afterAll(() => teardown.close());
  return { ...teardown.scope(), h: standIn('h', () => current, { close: 'the harness is closed by useHarness at teardown' }) };
}

/** useHarness, plus one sync worker on its runtime (`autoSweep: false` unless `worker` says otherwise). */
export function useHarnessWithWorker(options: HarnessOptions & { worker?: SyncWorkerOptions } = {}): HarnessWithWorkerScope {
  const scope = useHarness(options);
  let current: SyncWorker | undefined;
  beforeAll(() => {
    if (options.enabled !== false) current = scope.syncWorker(scope.h.runtime, options.worker);
  });
  return { ...scope, worker: standIn('worker', () => current) };
}

/** A harness per test, for tests that each need a fresh one (other settings, a fresh queue). */
export function useHarnessPerTest(): PerTestScope {
  let teardown = new Teardown();
  afterEach(async () => {
    const ending = teardown;
    teardown = new Teardown();
    await ending.close();
  });
  // Each method asks for the current test's teardown when it is called.
  return {
    harness: (options = {}) => teardown.harness(options),
    defer: (close) => teardown.scope().defer(close),
    syncWorker: (runtime, options) => teardown.scope().syncWorker(runtime, options),
    runtime: (config) => teardown.scope().runtime(config),
  };
}

/**
 * Closes what was registered, newest first, then each harness, newest first, noting what was left
 * open on it; rejects after everything is closed if anything failed or was left open. Exported for
 * the harness's own test; test files use the use* functions above.
 */
export class Teardown {
  private readonly closers: Array<() => unknown> = [];
  private readonly harnesses: Harness[] = [];

  /** `closeGraceMs`: how long a connection someone just closed may take to be gone on the server's side too. */
  constructor(private readonly closeGraceMs = 5_000) {}

  async harness(options: Omit<HarnessOptions, 'enabled'>): Promise<Harness> {
    const h = await createHarness(options.env, options.sandbox);
    this.harnesses.push(h);
    return h;
  }

  scope(): Scope {
    const defer = (close: () => unknown) => void this.closers.push(close);
    return {
      defer,
      syncWorker(runtime, options = {}) {
        const worker = createSyncWorker(runtime, { autoSweep: false, ...options });
        defer(() => worker.close(5_000));
        return worker;
      },
      runtime(config) {
        const runtime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
        defer(() => runtime.close());
        return runtime;
      },
    };
  }

  async close(): Promise<void> {
    const problems: unknown[] = [];
    while (this.closers.length) {
      try {
        await this.closers.pop()!();
      } catch (error) {
        problems.push(error);
      }
    }
    while (this.harnesses.length) {
      const h = this.harnesses.pop()!;
      try {
        const left = await leftOpen(h, this.closeGraceMs);
        await h.close();
        if (left.length) problems.push(new Error(`left open at teardown (${h.databaseName}):\n  ${left.join('\n  ')}`));
      } catch (error) {
        problems.push(error);
      }
    }
    if (problems.length === 1) throw problems[0];
    if (problems.length > 1) throw new AggregateError(problems, `${problems.length} problems at teardown`);
  }
}

/**
 * What is still open on `h` once everything registered has closed: BullMQ workers on its sync queue,
 * then, with the harness's own runtime closed, connections to its database. Closes `h.runtime`.
 */
async function leftOpen(h: Harness, closeGraceMs: number): Promise<string[]> {
  const left: string[] = [];
  const workers = await untilEmpty(closeGraceMs, () => h.runtime.queue.getWorkers());
  if (workers.length) {
    left.push(`${workers.length} BullMQ worker(s) still consuming ${h.config.queuePrefix}: a SyncWorker or worker process nobody closed (${names(workers)})`);
  }
  await h.runtime.close();
  const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await client.connect();
  try {
    const connections = await untilEmpty(
      closeGraceMs,
      async () =>
        (
          await client.query<{ application_name: string; state: string | null; query: string }>(
            'select application_name, state, query from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
            [h.databaseName],
          )
        ).rows,
    );
    for (const c of connections) {
      left.push(
        `a PostgreSQL connection to the test database: a pool or client nobody closed (${c.application_name || 'no application_name'}, ${c.state ?? 'no state'}, last query: ${c.query.slice(0, 80)})`,
      );
    }
  } finally {
    await client.end();
  }
  return left;
}

/** Polls `list` until it is empty or `ms` have passed; returns the last answer. */
async function untilEmpty<T>(ms: number, list: () => Promise<T[]>): Promise<T[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await list();
    if (found.length === 0 || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const names = (clients: Record<string, string>[]) => clients.map((c) => c.name ?? c.addr ?? '?').join(', ');
