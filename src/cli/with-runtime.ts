// The runtime a one-shot command works with: made from the configuration, always closed after.
import type { Config } from '../config.ts';
import { type Runtime, type RuntimeOptions, createRuntime } from '../runtime.ts';

/** Runs `fn` with a fresh runtime and closes it (pools, queue, Redis) whether `fn` succeeds or throws. */
export async function withRuntime<T>(config: Config, fn: (rt: Runtime) => Promise<T>, options?: RuntimeOptions): Promise<T> {
  const rt = createRuntime(config, options);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

/** What intake (enqueue, import) needs from a runtime: the database, the queue, and the configured defaults. */
export { publishDepsOf as publishDeps } from '../runtime.ts';
