// The steps after add-class: edit-class enables the join link, get-class reads it back. Both may be
// sent again harmlessly, so a lost answer costs only a repeat.
import * as mapping from '../mapping/index.ts';
import { isNotFound } from '../classroom/errors.ts';
import { SyncError } from './errors.ts';
import { readDue } from './read-schedule.ts';
import type { StepRun } from './run-handle.ts';

/**
 * A call about the batch's own class (created or adopted by it): sent when the read schedule says
 * the class will be visible (src/sync/read-schedule.ts); what it finds moves the schedule; a 404
 * within the read-lag patience is waited for rather than taken as gone.
 */
export async function callOnClass<T>(run: StepRun, classId: string, call: () => Promise<T>): Promise<T> {
  const timing = await readDue(run, 'class');
  let answer: T;
  try {
    answer = await call();
  } catch (error) {
    const scheduleMs = isNotFound(error) ? await run.readDone(timing, false) : run.stopMeasuring();
    const thrown = run.lag.classGone(error, run.current.classCreatedAt, classId, scheduleMs);
    // Gone, not lagging: its 404s taught the account nothing about the lag.
    if (thrown instanceof SyncError && thrown.kind === 'class_unknown') await run.deps.lagMonitor?.forget('class', classId);
    throw thrown;
  }
  await run.readDone(timing, true);
  return answer;
}

export async function enableLink(run: StepRun): Promise<void> {
  const classId = run.requireClassId();
  await callOnClass(run, classId, () => run.deps.classroom.enableJoinLink(classId, run.callOptions()));
  // No write here: edit-class may be sent again, harmlessly, so this recovery point is stored with
  // the next write (synced), or by the release if the run stops before it.
  const at = new Date(run.lag.now());
  run.unstored.linkEnabledAt = at;
  run.journal.transition('created', 'link_enabled', classId);
  run.moveTo({ ...run.current, state: 'link_enabled', linkEnabledAt: at });
}

export async function readLink(run: StepRun): Promise<void> {
  const classId = run.requireClassId();
  const timing = await readDue(run, 'link');
  const record = await callOnClass(run, classId, () => run.deps.classroom.getClass(classId, run.callOptions()));
  if (record._id !== classId) {
    throw new SyncError('remote_inconsistent', 'class_id_mismatch', `get-class for ${classId} answered with class ${record._id}; will read again`);
  }
  const scheduleMs = await run.readDone(timing, Boolean(record.joinMagicLink));
  if (!record.joinMagicLink) {
    const enabledAt = run.current.linkEnabledAt;
    if (enabledAt && run.lag.patienceLeft(enabledAt) > 0) throw run.lag.notVisibleYet(enabledAt, `the join link of class ${classId}`, scheduleMs);
    // The edit did not stick (or was undone on the remote): enable it again on the next attempt. Its
    // reads that found no link were not lag.
    await run.deps.lagMonitor?.forget('link', classId);
    run.unstored.linkEnabledAt = undefined;
    await run.write('created', (events) => mapping.redoLinkStep(run.deps.db, run.lease, run.deps.settings.leaseMs, events));
    throw new SyncError('remote_inconsistent', 'link_not_kept', `class ${classId} has no join link after enabling it; will enable it again`);
  }
  const linkEnabledAt = run.current.linkEnabledAt ?? new Date(run.lag.now());
  const read = { joinLink: record.joinMagicLink, remoteName: typeof record.name === 'string' ? record.name : undefined, linkEnabledAt };
  await run.write('synced', (events) => mapping.markSynced(run.deps.db, run.lease, read, events));
  run.unstored.linkEnabledAt = undefined;
}
