// `classroom-sync abandon BATCH_ID… [--institute ID] [--reason TEXT]` gives batches up for good
// (typically: the remote refuses their institute), and `abandon --undo BATCH_ID…` takes that back.
// See src/sync/abandon-batches.ts for what may be abandoned and why.
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../mapping/index.ts';
import { institutesOf, notKnownUnder } from '../read-model/index.ts';
import { type AbandonResult, type UndoAbandonResult, abandonBatches, undoAbandon } from '../sync/abandon-batches.ts';
import type { SyncQueue } from '../sync/queue.ts';

export interface AbandonRequest {
  batchIds: readonly string[];
  instituteId: string;
  /** CLASSROOM_INSTITUTE_ID: the undo hint names `--institute` only for another one. */
  defaultInstituteId: string;
  reason: string | null;
  undo: boolean;
  /** The operator checked the remote: no class of these batches exists. */
  confirmNoClass?: boolean;
  json: boolean;
}

/** Abandons (or, with `undo`, restores) each batch once; returns the exit code: 1 when any could not be handled. */
export async function runAbandon(deps: { db: Db; queue: SyncQueue; logger: Pick<Logger, 'warn'> }, request: AbandonRequest): Promise<number> {
  const keys = [...new Set(request.batchIds)].map((batchId) => ({ instituteId: request.instituteId, batchId }));
  const options = { reason: request.reason, confirmNoClass: request.confirmNoClass === true };
  const failed = request.undo
    ? report(await whereKnown(deps.db, await undoAbandon(deps, keys, options)), request.json, describeUndo)
    : report(await whereKnown(deps.db, await abandonBatches(deps, keys, options)), request.json, (r) => describeAbandon(r, undoHint(request)));
  return failed ? 1 : 0;
}

/** What an unknown batch's line says: where the id is known instead, if anywhere. */
interface WhereKnown {
  message?: string;
  /** Institutes the batch id is known under (only on an `unknown` result). */
  knownUnder?: string[];
}

/**
 * Names, for each unknown batch, the institutes it is known under, as `status` and `retry` do: the
 * usual cause is a batch of another institute given without its `--institute`.
 */
async function whereKnown<R extends { outcome: string; instituteId: string; batchId: string }>(db: Db, results: R[]): Promise<(R & WhereKnown)[]> {
  const located: (R & WhereKnown)[] = [];
  for (const r of results) {
    if (r.outcome !== 'unknown') {
      located.push(r);
      continue;
    }
    const knownUnder = await institutesOf(db, r.batchId);
    located.push({ ...r, message: notKnownUnder(r.instituteId, knownUnder), knownUnder });
  }
  return located;
}

/** Prints one line per batch (problems on stderr) and returns true when any batch could not be handled. */
function report<R extends { outcome: string }>(results: R[], json: boolean, describe: (r: R) => { line: string; problem: boolean }): boolean {
  let problems = 0;
  for (const r of results) {
    const { line, problem } = describe(r);
    if (problem) problems += 1;
    if (json) console.log(JSON.stringify(r));
    else (problem ? console.error : console.log)(line);
  }
  if (!json) console.log(summary(results));
  return problems > 0;
}

/** The undo command for these batches; `--institute` only when it is not the default one. */
function undoHint(request: AbandonRequest): string {
  return `classroom-sync abandon --undo${request.instituteId === request.defaultInstituteId ? '' : ` --institute ${request.instituteId}`}`;
}

function describeAbandon(r: AbandonResult & WhereKnown, undo: string): { line: string; problem: boolean } {
  switch (r.outcome) {
    case 'abandoned': {
      const note = r.mayHaveClass ? `; note: ${r.message}` : r.classRuledOut ? '; no class of it exists, as you confirmed' : '';
      return { line: `${r.batchId}: ${r.from} → abandoned (undo: ${undo} ${r.batchId})${note}`, problem: false };
    }
    case 'already_abandoned':
      return {
        line: r.classRuledOut
          ? `${r.batchId}: already abandoned; no class of it exists, as you confirmed: reconciliation stops looking for one`
          : `${r.batchId}: already abandoned; nothing changed`,
        problem: false,
      };
    case 'refused':
      return { line: `${r.batchId}: not abandoned: ${r.message}`, problem: true };
    case 'unknown':
      return { line: `${r.batchId}: ${r.message}`, problem: true };
  }
}

function describeUndo(r: UndoAbandonResult & WhereKnown): { line: string; problem: boolean } {
  switch (r.outcome) {
    case 'restored': {
      const next = r.to === 'failed' || r.to === 'needs_review' ? '; `classroom-sync retry` resumes it' : r.queued ? ' (queued)' : '';
      return { line: `${r.batchId}: abandoned → ${r.to}${next}`, problem: false };
    }
    case 'not_abandoned':
      return { line: `${r.batchId}: not abandoned (state ${r.to}); nothing changed`, problem: false };
    case 'unknown':
      return { line: `${r.batchId}: ${r.message}`, problem: true };
  }
}

function summary(results: readonly { outcome: string }[]): string {
  const counts = new Map<string, number>();
  for (const r of results) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
  return [...counts].map(([outcome, n]) => `${n} ${outcome.replaceAll('_', ' ')}`).join(', ');
}
