// `classroom-sync retry BATCH_ID… | --failed`: puts failed and needs_review batches back. Says
// plainly when there is nothing to retry (a synced batch, one still in progress) and, for an id
// not found, under which institute it is known instead.
import type { Db } from '../mapping/index.ts';
import type { SyncQueue } from '../sync/queue.ts';
import { type RetryResult, retryBatches } from '../sync/retry-batches.ts';
import { institutesOf, notKnownUnder } from '../read-model/index.ts';

export interface RetryRequest {
  batchIds: readonly string[];
  allFailed: boolean;
  instituteId: string;
}

export interface RetryIo {
  out(line: string): void;
  err(line: string): void;
}

const consoleIo: RetryIo = { out: (line) => console.log(line), err: (line) => console.error(line) };

/** Returns the exit code: 1 when a named batch is not known, else 0. */
export async function runRetry(deps: { db: Db; queue: SyncQueue }, request: RetryRequest, io: RetryIo = consoleIo): Promise<number> {
  const results = await retryBatches(
    deps,
    request.allFailed ? { allFailed: true } : { keys: request.batchIds.map((batchId) => ({ instituteId: request.instituteId, batchId })) },
  );
  for (const r of results) io.out(`${r.batchId}: ${outcomeOf(r)}`);
  const missing = request.allFailed ? [] : request.batchIds.filter((id) => !results.some((r) => r.batchId === id));
  for (const id of missing) io.err(`${id}: ${notKnownUnder(request.instituteId, await institutesOf(deps.db, id))}`);
  const putBack = results.filter(wasPutBack).length;
  if (putBack > 0) io.out(`${putBack} batch(es) put back`);
  else if (request.allFailed) io.out('no batch is failed; nothing to retry');
  return missing.length > 0 ? 1 : 0;
}

function wasPutBack(r: RetryResult): boolean {
  return (r.from === 'failed' || r.from === 'needs_review') && r.to !== r.from;
}

function outcomeOf(r: RetryResult): string {
  if (wasPutBack(r)) return `${r.from} → ${r.to}${r.queued ? ' (queued)' : ''}`;
  if (r.from === 'synced') return 'already synced; nothing to retry';
  if (r.from === 'failed' || r.from === 'needs_review') return `still ${r.from} (changed while retrying); run retry again`;
  // In progress: nothing to put back, though a lost job is queued again (what the sweep would do).
  return `still ${r.from}, not failed; nothing to retry${r.queued ? ' (its job was missing and is queued again)' : ''}`;
}
