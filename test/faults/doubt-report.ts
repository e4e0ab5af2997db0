// How the fault suite prints what doubt-run.ts adds to its report: one row per figure, and the first
// few batches each of its checks names.
import type { DoubtFigures } from './doubt-run.ts';
import type { ChangeChecks } from './rest-checks.ts';

/** The report's rows for the doubt rule's figures and checks. */
export function doubtRows(d: DoubtFigures, k: ChangeChecks): [string, string][] {
  const w = d.refusals.listingWindow;
  const lease = d.leaseAudit;
  return [
    ['refusals injected (bodyRejected) per operation', JSON.stringify(d.refusals.injected)],
    ['listing refused window: ms / exhausted to needs_review / closed by', `${w.lastedMs} / ${w.exhausted} / ${w.closedBy}`],
    [
      'edits refused (rows) / synced with the newest change refused / class took it, row says refused',
      `${d.editsRefused.recorded} / ${d.editsRefused.atRest.length} / ${d.editsRefused.rowBehindClass.length}`,
    ],
    [
      'classes deleted on the remote / by moment / their batches rest in',
      `${d.deletions.deleted} / ${JSON.stringify(d.deletions.byWhen)} / ${JSON.stringify(d.deletions.restingIn)}`,
    ],
    [
      'operator: batches scripted / actions / errors / steps never due',
      `${d.operators.batchesScripted} / ${JSON.stringify(d.operators.actions)} / ${d.operators.errors} / ${d.operators.dropped}`,
    ],
    ['heal phase: operator actions / still held after retries / ms', `${JSON.stringify(d.heal.actions)} / ${d.heal.heldAfterRetries.length} / ${d.heal.ms}`],
    [
      'left abandoned on purpose (may have a class) / failed: class deleted / synced: class deleted',
      `${d.abandoned.left} (${d.abandoned.mayHaveClass}) / ${d.failedClassGone} / ${d.syncedClassGone}`,
    ],
    [
      'left doubt wrongly / cancels not ended after a delete / failed unexpectedly / abandoned unexpectedly',
      `${k.leftDoubt.length} / ${k.cancelNotEnded.length} / ${k.unexpectedFailed.length} / ${k.unexpectedAbandoned.length}`,
    ],
    [
      'lease audit: calls checked / unattributed / without a live lease / sent under one, read late / least margin (ms) / under the 250 ms guard',
      `${JSON.stringify(lease.checked)} / ${lease.unattributed} / ${lease.violations.length} / ${lease.lateArrivals.length} / ${lease.minMarginMs ?? '-'} / ${lease.underGuard}`,
    ],
    ['webhooks last word: checked / wrong / missing', `${d.lastWord.checked} / ${d.lastWord.wrong.length} / ${d.lastWord.missing.length}`],
  ];
}

/** The first few entries of each of the doubt rule's checks. */
export function doubtSamples(d: DoubtFigures, k: ChangeChecks): [string, string][] {
  const lines: [string, readonly string[]][] = [
    ['left doubt wrongly', k.leftDoubt],
    ['cancel not ended after a delete', k.cancelNotEnded],
    ['failed unexpectedly', k.unexpectedFailed],
    ['abandoned unexpectedly', k.unexpectedAbandoned],
    [
      'call without a lease',
      d.leaseAudit.violations.map((v) => `${v.batchId} ${v.operation} at ${v.arrivedAt}: ${v.lease} lease (epoch ${v.epoch}), margin ${v.marginMs} ms`),
    ],
    [
      'call sent under a lease, read after it',
      d.leaseAudit.lateArrivals.map((v) => `${v.batchId} ${v.operation} at ${v.arrivedAt}: ${v.lease} lease (epoch ${v.epoch}), margin ${v.marginMs} ms`),
    ],
    ['last word wrong', d.lastWord.wrong],
    ['last word missing', d.lastWord.missing],
    ['held after the heal', d.heal.heldAfterRetries],
    ['class took a change its row says was refused', d.editsRefused.rowBehindClass],
  ];
  return lines.flatMap(([label, entries]) => entries.slice(0, 5).map((entry): [string, string] => [label, entry]));
}

/** Entries naming batches (first word: the batch id), for the report's offenders. */
export function doubtNamed(d: DoubtFigures): string[][] {
  return [d.leaseAudit.violations.map((v) => v.batchId), d.lastWord.wrong, d.lastWord.missing];
}
