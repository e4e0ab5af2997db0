// A Redis command that may only help: its answer when the connection is ready and answers within
// `ms`, else undefined (the caller goes on as if nothing were known). For what a run consults on its
// way (learned lags, shared listings), where Redis slow or down must cost neither the run nor its lease.
import { withTimeout } from '../support/timeout.ts';
import type { Redis } from './connection.ts';

export async function askBounded<T>(
  redis: Redis,
  ms: number,
  what: string,
  command: () => Promise<T>,
  onError?: (error: unknown) => void,
): Promise<T | undefined> {
  // Not ready: a command would wait in the offline queue for as long as Redis is away.
  if (redis.status !== 'ready') return undefined;
  try {
    return await withTimeout(command(), ms, what);
  } catch (error) {
    onError?.(error);
    return undefined;
  }
}
