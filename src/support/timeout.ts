// The one way this codebase waits for something "at most so long". `work` is never cancelled: it
// keeps running. A rejection within the time rejects the wait; a later one is ignored (the caller
// stopped waiting on purpose).

export type Bounded<T> = { done: true; value: T } | { done: false };

/** Waits for `work` at most `ms`: `{ done: true, value }`, or `{ done: false }` once `ms` has passed. */
export async function within<T>(work: Promise<T>, ms: number): Promise<Bounded<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<Bounded<T>>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), ms);
    timer.unref?.();
  });
  work.catch(() => {});
  try {
    return await Promise.race([work.then((value): Bounded<T> => ({ done: true, value })), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** `work`'s result, or a TimeoutError naming `what` once `ms` has passed. */
export async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  const result = await within(work, ms);
  if (!result.done) throw new TimeoutError(`${what} did not answer within ${ms} ms`);
  return result.value;
}
