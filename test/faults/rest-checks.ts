// The fault suite's checks of every batch at rest against what its last event asked for (the change
// driver's expectations), what the remote refused, what the suite deleted on the remote and what the
// operator left abandoned. Each check names the batches at fault and is empty when the run is right.
import type { ClassTruth } from '../../src/sandbox/index.ts';
import type { batchClasses } from '../../src/db/schema/index.ts';
import type { createRuntime } from '../../src/runtime/runtime.ts';
import type { Expected } from './changes.ts';
import type { Deletion } from './remote-deletes.ts';

type Runtime = ReturnType<typeof createRuntime>;
type Row = typeof batchClasses.$inferSelect;

export interface ChangeChecks {
  /** Batches at rest in `cancelled` with a class listed and not archived (any class carrying their ref). */
  cancelledVisible: string[];
  /**
   * Batches at rest in `synced` whose class was not last sent their newest name (or is not theirs),
   * unless the remote refused that change (then: whose class does not carry the name the row says it has).
   */
  namesStale: string[];
  /** The same for subject, room and being listed (not archived). */
  fieldsStale: string[];
  /**
   * Rows not at the highest version published for them, or whose state disagrees with their last
   * event (cancelled vs not), or whose history applied a version not above the one before it.
   */
  staleApplied: string[];
  /** Expected-cancelled batches an operator holds (needs_review): the cancel waits for them. */
  cancelHeld: string[];
  /** Rows still with work to do when the heal phase ended. */
  notAtRest: string[];
  /** Batches whose history leaves doubt for `failed` or `cancelled` (creating → failed / cancelled). */
  leftDoubt: string[];
  /** Batches whose class the suite deleted while their cancel was pending, and that did not end `cancelled`. */
  cancelNotEnded: string[];
  /** Batches at rest in `failed` other than those whose class the suite deleted (the remote no longer knows it). */
  unexpectedFailed: string[];
  /** Batches at rest in `abandoned` that the operator did not mean to leave so. */
  unexpectedAbandoned: string[];
}

/** What the checks saw that is not a fault: edits the remote refused, and how their batches rest. */
export interface RestNotes {
  /** Rows with an edit-class refusal recorded (`class_edit_refused`). */
  editsRefused: number;
  /** Batches at rest in `synced` whose newest change the remote refused: their class keeps what the row says it has. */
  refusedAtRest: string[];
  /**
   * Batches at rest in `synced` whose class took their newest change while the row records it refused
   * (an edit whose answer was lost, its repeat refused): the row says the class kept what it had.
   */
  rowBehindClass: string[];
}

/** The newest refusal of an edit-class recorded for a row: the revision it closed, its fields, the HTTP status. */
export interface EditRefusal {
  revision: number;
  fields: string[];
  httpStatus: number | null;
}

export interface RestInput {
  rows: readonly Row[];
  classes: readonly ClassTruth[];
  expected: Map<string, Expected>;
  deleted: Map<string, Deletion>;
  leave: ReadonlySet<string>;
  atRest: (row: Row) => boolean;
}

/** The sandbox's classes by the `chaosRef` each carries (the batch it was made for). */
export function classesByRef(classes: readonly ClassTruth[]): Map<string, ClassTruth[]> {
  const byRef = new Map<string, ClassTruth[]>();
  for (const c of classes) {
    const ref = c.extra.chaosRef;
    if (typeof ref === 'string') byRef.set(ref, [...(byRef.get(ref) ?? []), c]);
  }
  return byRef;
}

/** Classes beyond the first of any batch, counting the classes the suite deleted on the remote too. */
export function duplicatesOf(classes: readonly ClassTruth[], deletions: readonly Deletion[]): number {
  const ids = new Map<string, Set<string>>();
  const add = (ref: string, id: string) => ids.set(ref, (ids.get(ref) ?? new Set()).add(id));
  for (const [ref, list] of classesByRef(classes)) for (const c of list) add(ref, c.id);
  for (const d of deletions) add(d.batchId, d.classId);
  return [...ids.values()].reduce((sum, set) => sum + Math.max(0, set.size - 1), 0);
}

export async function changeChecks(runtime: Runtime, input: RestInput, notes: RestNotes): Promise<ChangeChecks> {
  const checks: ChangeChecks = {
    cancelledVisible: [],
    namesStale: [],
    fieldsStale: [],
    staleApplied: [],
    cancelHeld: [],
    notAtRest: [],
    leftDoubt: await leftDoubt(runtime),
    cancelNotEnded: [],
    unexpectedFailed: [],
    unexpectedAbandoned: [],
  };
  const byRef = classesByRef(input.classes);
  const history = await appliedVersions(runtime);
  const refusals = await editRefusals(runtime);
  notes.editsRefused = refusals.size;
  for (const row of input.rows) {
    const exp = input.expected.get(row.batchId);
    if (!exp) continue;
    const id = `${row.batchId} (${row.state}, v${row.version ?? '-'})`;
    const deletion = input.deleted.get(row.batchId);
    if (!input.atRest(row)) checks.notAtRest.push(`${id}: revision ${row.revision}, applied ${row.appliedRevision}, archived ${row.archivedAt !== null}`);
    if (row.version !== exp.version) checks.staleApplied.push(`${id}: stands at version ${row.version}, the highest published is ${exp.version}`);
    const versions = history.get(row.id) ?? [];
    if (versions.some((v, i) => i > 0 && v <= versions[i - 1]!)) checks.staleApplied.push(`${id}: its history applied versions ${versions.join(', ')}`);
    const visible = (byRef.get(row.batchId) ?? []).filter((c) => !c.archived);
    if (row.state === 'cancelled' && visible.length > 0) checks.cancelledVisible.push(`${id}: class ${visible.map((c) => c.id).join(', ')} listed`);
    if (deletion && deletion.when !== 'random' && exp.cancelled && row.state !== 'cancelled')
      checks.cancelNotEnded.push(`${id}: class deleted while ${deletion.state}`);
    if (row.state === 'abandoned') {
      if (!input.leave.has(row.batchId)) checks.unexpectedAbandoned.push(id);
      continue;
    }
    if (row.state === 'failed' && !(deletion && row.lastErrorKind === 'class_unknown'))
      checks.unexpectedFailed.push(`${id}: ${row.lastErrorKind}: ${row.lastError}`);
    if (exp.cancelled) {
      if (row.state === 'needs_review') checks.cancelHeld.push(id);
      else if (row.state !== 'cancelled') checks.staleApplied.push(`${id}: its last event cancelled it`);
      continue;
    }
    if (row.state === 'cancelled') checks.staleApplied.push(`${id}: cancelled, but its last event (v${exp.version}) did not cancel it`);
    if (row.state === 'synced' && !deletion) checkClass(checks, notes, id, row, exp, input.classes, refusals.get(row.id));
  }
  return checks;
}

/** A synced batch's class is its own (see checkSynced). */
function checkClass(
  checks: ChangeChecks,
  notes: RestNotes,
  id: string,
  row: Row,
  exp: Expected,
  classes: readonly ClassTruth[],
  refusal: EditRefusal | undefined,
): void {
  const remote = row.classId === null ? undefined : classes.find((c) => c.id === row.classId);
  if (remote?.extra.chaosRef === row.batchId) checkSynced(checks, notes, id, row, exp, remote, refusal);
  else checks.namesStale.push(`${id}: class ${row.classId} is ${remote ? `batch ${String(remote.extra.chaosRef)}'s` : 'not on the remote'}`);
}

/**
 * A synced batch's class carries its newest values, unless the remote refused that change (a
 * `class_edit_refused` line in its history for its revision, the durable record: last_error may be
 * replaced by a later error and is cleared once synced; the call refused not being a refused key):
 * then the class carries what the row says it has.
 */
function checkSynced(checks: ChangeChecks, notes: RestNotes, id: string, row: Row, exp: Expected, remote: ClassTruth, refusal: EditRefusal | undefined): void {
  const refusedNewest = refusal !== undefined && refusal.revision === row.revision;
  const byKey = refusedNewest && (refusal.httpStatus === 401 || refusal.httpStatus === 403);
  const recorded = refusedNewest && !byKey;
  const why = byKey
    ? ` (its newest change was recorded as refused, but the remote refused the key: HTTP ${refusal.httpStatus})`
    : refusedNewest && !recorded
      ? ` (its newest change was refused, but the row no longer records it: last_error_kind ${row.lastErrorKind})`
      : '';
  const kept = { subject: row.appliedEvent?.subject, room: row.appliedEvent?.extra?.room, archivedOk: refusal?.fields.includes('archived') ?? false };
  if (remote.sentName !== exp.name) {
    if (recorded && remote.sentName === row.className) notes.refusedAtRest.push(`${id}: name`);
    else
      checks.namesStale.push(
        `${id}: class last sent ${JSON.stringify(remote.sentName)}, row says ${JSON.stringify(row.className)}, newest is ${JSON.stringify(exp.name)}${why}`,
      );
  } else if (row.className !== exp.name) {
    // The class took the change (an edit whose answer was lost), and the row says it did not (its repeat was refused).
    if (refusedNewest) notes.rowBehindClass.push(`${id}: class has ${JSON.stringify(remote.sentName)}, row says ${JSON.stringify(row.className)}`);
    else checks.namesStale.push(`${id}: class has the newest name ${JSON.stringify(exp.name)}, row says ${JSON.stringify(row.className)}`);
  }
  const newestFields = remote.subject === exp.subject && (exp.room === undefined || remote.extra.room === exp.room) && !remote.archived;
  const keptFields = remote.subject === kept.subject && (kept.room === undefined || remote.extra.room === kept.room) && (!remote.archived || kept.archivedOk);
  if (newestFields) return;
  if (recorded && keptFields) notes.refusedAtRest.push(`${id}: fields`);
  else
    checks.fieldsStale.push(
      `${id}: class has subject ${remote.subject}, room ${String(remote.extra.room)}, archived ${remote.archived}; newest ${exp.subject}, ${exp.room ?? '(any room)'}, not archived${why}`,
    );
}

/** Each row's newest refused edit (its `class_edit_refused` line) and the status of the call refused (the `remote_call` line before it). */
async function editRefusals(runtime: Runtime): Promise<Map<number, EditRefusal>> {
  const result = await runtime.database.pool.query<{
    row_id: string;
    type: string;
    http_status: number | null;
    detail: { revision?: number; fields?: string[] } | null;
  }>(
    `select batch_row_id as row_id, type, http_status, detail from batch_events
      where type = 'class_edit_refused' or (type = 'remote_call' and operation = 'editClass' and outcome = 'rejected') order by id`,
  );
  const refusals = new Map<number, EditRefusal>();
  const lastStatus = new Map<number, number | null>();
  for (const r of result.rows) {
    const rowId = Number(r.row_id);
    if (r.type === 'remote_call') lastStatus.set(rowId, r.http_status);
    else refusals.set(rowId, { revision: r.detail?.revision ?? -1, fields: r.detail?.fields ?? [], httpStatus: lastStatus.get(rowId) ?? null });
  }
  return refusals;
}

/** Batches whose history moves them out of doubt the wrong way: from `creating` straight to `failed` or `cancelled`. */
async function leftDoubt(runtime: Runtime): Promise<string[]> {
  const result = await runtime.database.pool.query<{ batch_id: string; to_state: string; at: Date }>(
    `select c.batch_id, e.to_state, e.at from batch_events e join batch_classes c on c.id = e.batch_row_id
      where e.from_state = 'creating' and e.to_state in ('failed', 'cancelled') order by e.id`,
  );
  return result.rows.map((r) => `${r.batch_id}: creating → ${r.to_state} at ${r.at.toISOString()}`);
}

/** The versions each row's changes were applied at (its updated, cancel_requested and reopened lines), in order, by row id. */
async function appliedVersions(runtime: Runtime): Promise<Map<number, number[]>> {
  const result = await runtime.database.pool.query<{ row_id: string; version: string | null }>(
    `select c.id as row_id, e.detail->>'version' as version from batch_events e join batch_classes c on c.id = e.batch_row_id
      where e.type in ('updated', 'cancel_requested', 'reopened') order by e.id`,
  );
  const versions = new Map<number, number[]>();
  for (const r of result.rows) {
    if (r.version !== null) versions.set(Number(r.row_id), [...(versions.get(Number(r.row_id)) ?? []), Number(r.version)]);
  }
  return versions;
}
