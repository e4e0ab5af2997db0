// The fleet bench:settle and bench:calls measure, all in this process: a scratch database and queue
// prefix, a sandbox, one runtime with one sync worker on it, and a pool for the figures; all removed
// once the measurement ends, whatever it threw.
import type pg from 'pg';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { type Runtime, createRuntime } from '../../src/runtime/runtime.ts';
import { type RunningSandbox, type SandboxOptions, sandboxOptionsFromConfig, startSandbox } from '../../src/sandbox/index.ts';
import { createSyncWorker } from '../../src/sync/sync-worker.ts';
import { createScratch, scratchPool } from './scratch.ts';

/** The injected faults of both benches: 5xx before storing, 5xx after storing, HTTP 200 with body status 500; every operation. */
export const FAULT_RATES = { error5xx: 0.05, error5xxAfterStore: 0.05, bodyError: 0.05 };

export interface InProcessFleet {
  sandbox: RunningSandbox;
  runtime: Runtime;
  pool: pg.Pool;
}

export interface FleetSetup {
  /** Variables over the scratch database's and queue prefix's. */
  env?: Record<string, string>;
  /** The sandbox's options beyond those the configuration gives it. */
  sandbox: (config: Config) => Partial<SandboxOptions>;
}

/** Runs `measure` on a fleet named `name` once its worker is ready; tears the fleet down after. */
export async function withInProcessFleet<T>(name: string, setup: FleetSetup, measure: (fleet: InProcessFleet) => Promise<T>): Promise<T> {
  const scratch = await createScratch(name);
  const env = { ...scratch.env, ...setup.env };
  const config = loadConfig(env);
  const sandbox = await startSandbox({ ...sandboxOptionsFromConfig(config), ...setup.sandbox(config) });
  const runtime = createRuntime(loadConfig({ ...env, CLASSROOM_BASE_URL: sandbox.url }), { logger: createLogger({ level: 'silent' }) });
  const worker = createSyncWorker(runtime);
  const pool = scratchPool(scratch);
  try {
    await worker.worker.waitUntilReady();
    return await measure({ sandbox, runtime, pool });
  } finally {
    await worker.close();
    await runtime.close();
    await sandbox.close();
    await pool.end();
    await scratch.drop();
  }
}
