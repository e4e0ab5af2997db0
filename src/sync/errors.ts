// What a sync run tells the queue. The processor turns each into BullMQ's behaviour in one place.

/** Try again later without counting an attempt: a lease held elsewhere, a settle delay, a 429. */
export class DeferError extends Error {
  override readonly name = 'DeferError';
  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(reason);
  }
}

/** The batch reached `failed` or `needs_review`; retrying the job cannot help (`classroom-sync retry` can). */
export class PermanentSyncError extends Error {
  override readonly name = 'PermanentSyncError';
}

/** Another runner holds a newer lease epoch: this run must stop writing at once. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  constructor(batchId: string) {
    super(`lease on batch ${batchId} was taken over by another runner; this run stops without writing`);
  }
}
