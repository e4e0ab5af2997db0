// The mapping table's own refusals. Database failures themselves stay the driver's errors (the sync
// layer classifies them, src/sync/errors.ts); these are what a write found about the batch.

/** Base class: a write of the mapping table refused what its caller asked. */
export abstract class MappingError extends Error {}

/** A run's write found another runner holding a newer lease epoch: this run must stop writing at once. */
export class LeaseLostError extends MappingError {
  override readonly name = 'LeaseLostError';
  constructor(batchId: string) {
    super(`lease on batch ${batchId} was taken over by another runner; this run stops without writing`);
  }
}
