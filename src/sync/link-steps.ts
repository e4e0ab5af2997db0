// The steps after add-class: edit-class enables the join link, get-class reads it back. Both may be
// sent again harmlessly, so a lost answer costs only a repeat.
import type { ClassRecord } from '../classroom/schemas.ts';
import * as mapping from '../mapping/index.ts';
import { SyncError } from './errors.ts';
import type { StepRun } from './run-handle.ts';

export async function enableLink(run: StepRun): Promise<void> {
  const classId = run.requireClassId();
  try {
    await run.deps.classroom.enableJoinLink(classId, run.callOptions());
  } catch (error) {
    run.observeLag(error);
    throw run.lag.classGone(error, run.current.classCreatedAt, classId, 'edit-class');
  }
  run.observeLag();
  // No write here: edit-class may be sent again, harmlessly, so this recovery point is stored with
  // the next write (synced), or by the release if the run stops before it.
  const at = new Date(run.lag.now());
  run.unstored.linkEnabledAt = at;
  run.journal.transition('created', 'link_enabled', classId);
  run.moveTo({ ...run.current, state: 'link_enabled', linkEnabledAt: at });
}

export async function readLink(run: StepRun): Promise<void> {
  const classId = run.requireClassId();
  let record: ClassRecord;
  try {
    record = await run.deps.classroom.getClass(classId, run.callOptions());
  } catch (error) {
    run.observeLag(error);
    throw run.lag.classGone(error, run.current.classCreatedAt, classId, 'get-class');
  }
  run.observeLag();
  if (record._id !== classId) {
    throw new SyncError('remote_inconsistent', 'class_id_mismatch', `get-class for ${classId} answered with class ${record._id}; will read again`);
  }
  if (!record.joinMagicLink) {
    const enabledAt = run.current.linkEnabledAt;
    if (enabledAt && run.lag.patienceLeft(enabledAt) > 0) throw run.lag.notVisibleYet(enabledAt, `the join link of class ${classId}`);
    // The edit did not stick (or was undone on the remote): enable it again on the next attempt.
    run.unstored.linkEnabledAt = undefined;
    await run.write('created', (events) => mapping.redoLinkStep(run.deps.db, run.lease, run.deps.settings.leaseMs, events));
    throw new SyncError('remote_inconsistent', 'link_not_kept', `class ${classId} has no join link after enabling it; will enable it again`);
  }
  const linkEnabledAt = run.current.linkEnabledAt ?? new Date(run.lag.now());
  const read = { joinLink: record.joinMagicLink, remoteName: typeof record.name === 'string' ? record.name : undefined, linkEnabledAt };
  await run.write('synced', (events) => mapping.markSynced(run.deps.db, run.lease, read, events));
  run.unstored.linkEnabledAt = undefined;
}
