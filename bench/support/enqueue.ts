// Intake's two whole-process paths, shared by bench/intake.ts and bench/scale.ts: BullMQ's own
// `addBulk` (the yardstick) and `classroom-sync enqueue FILE`, the compiled CLI in a process of its own.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config/config.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { createSyncQueue, syncJob } from '../../src/sync/queue.ts';
import { benchEvents } from './scratch.ts';

/** The command as installed (`npm run build` makes it). */
export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** Jobs per second through Queue.addBulk, `perCall` per call, one call at a time, on queue prefix `prefix`. */
export async function addBulkRate(env: Record<string, string>, prefix: string, idPrefix: string, n: number, perCall = 500): Promise<number> {
  const config = loadConfig(env);
  const redis = createRedis(config.redisUrl, 'worker');
  const queue = createSyncQueue({ connection: redis, prefix, attempts: config.sync.attempts });
  try {
    await queue.waitUntilReady();
    const jobs = benchEvents(idPrefix, n).map((e) => syncJob({ instituteId: config.classroom.instituteId, batchId: e.batchId }));
    const started = performance.now();
    for (let i = 0; i < n; i += perCall) await queue.addBulk(jobs.slice(i, i + perCall));
    return n / ((performance.now() - started) / 1000);
  } finally {
    await queue.close();
    await redis.quit();
  }
}

/** Wall time (ms) of `classroom-sync <args>` (e.g. `enqueue FILE`), spawn to exit; throws unless it exits 0. */
export async function runCli(env: Record<string, string>, args: readonly string[]): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`classroom-sync ${args[0]} exited with ${code}: ${output.slice(-1_000)}`);
  return performance.now() - started;
}
