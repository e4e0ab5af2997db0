// The runtime a one-shot command works with: made from the configuration, always closed after.
// Loaded when a command runs, like each command's own module: `--help`, and a command refused for
// its arguments, need neither BullMQ, drizzle nor the remote client (see src/cli/index.ts).
import type { Config } from '../config/config.ts';
import type { PublishDeps } from '../intake/publish.ts';
import type { Runtime, RuntimeOptions } from '../runtime/runtime.ts';

/** Runs `fn` with a fresh runtime and closes it (pools, queue, Redis) whether `fn` succeeds or throws. */
export async function withRuntime<T>(config: Config, fn: (rt: Runtime) => Promise<T>, options?: RuntimeOptions): Promise<T> {
  const { createRuntime } = await import('../runtime/runtime.ts');
  const rt = createRuntime(config, options);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

/** `withRuntime` for intake (enqueue, import): the database, the queue, and the configured defaults. */
export async function withPublishDeps<T>(config: Config, fn: (deps: PublishDeps) => Promise<T>): Promise<T> {
  const { publishDepsOf } = await import('../runtime/runtime.ts');
  return withRuntime(config, (rt) => fn(publishDepsOf(rt)));
}
