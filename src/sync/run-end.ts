// How a run that did not reach rest leaves its batch, and what it tells the queue. Every error is
// classified once (`failureOf`), and what happens next follows from its kind (`queueAction`): a
// delay leaves the batch unchanged (a 429 also pauses the fleet, a refused key stops this
// process), a retry or an outlast keeps the error for operators, a failure is stored as `failed`.
// The lease is always released on the way out, with the calls the run made.
import { isClassroomError, isForbidden, retryAfterOf } from '../classroom/errors.ts';
import { aboutOf } from '../classroom/operations.ts';
import * as mapping from '../mapping/index.ts';
import { DeferError, type Failure, PermanentSyncError, RunStoppedError, SyncError, failureOf, queueAction } from './errors.ts';
import type { BatchRun } from './steps.ts';

/** How soon a job deferred by a refused key comes back (its process is paused until the key works). */
const KEY_REFUSED_RETRY_MS = 1_000;

/** Records why this run stopped and releases the lease; returns the error the queue acts on, with the batch's state then. */
export async function endRun(run: BatchRun, error: unknown): Promise<RunStoppedError> {
  const stopped = await classifyAndRelease(run, error);
  return new RunStoppedError(stopped, run.current.state);
}

async function classifyAndRelease(run: BatchRun, error: unknown): Promise<SyncError> {
  const failure = await confirmRefusal(run, error, failureOf(error));
  const action = queueAction(failure.kind);
  // The job's last attempt: a failure that would be retried is final, recorded under this run's lease.
  if (action === 'fail' || (action === 'retry' && run.lastAttempt)) return fail(run, failure, error, action === 'retry');
  switch (action) {
    case 'delay':
      return delay(run, failure, error);
    case 'retry':
    case 'outlast': {
      // Logged as the classified error: a raw database error's message carries the statement's
      // parameters, which can hold a join link.
      const retry = error instanceof SyncError ? error : new SyncError(failure.kind, failure.reason, failure.message, { cause: error });
      const logged = isClassroomError(error) ? error : retry;
      run.log.warn({ err: logged, kind: failure.kind, reason: failure.reason, state: run.current.state }, `attempt failed, will retry: ${failure.message}`);
      await release(run, { as: 'attempt_failed', error: failure.message, errorKind: failure.kind });
      return retry;
    }
  }
}

/**
 * A 403 is about the key or about this batch's institute or class: a harmless read tells which. When
 * that read fails too, it cannot be told yet, and the attempt is retried. When it works, the batch
 * uses an attempt rather than being failed at once: the key's refusal may have ended in between.
 */
async function confirmRefusal(run: BatchRun, error: unknown, failure: Failure): Promise<Failure> {
  if (!isForbidden(error) || !run.deps.credentials) return failure;
  const verdict = await run.deps.credentials.confirmForbidden(error);
  if (verdict === 'batch') {
    const message = `${namingTarget(run, error, failure.message)}; a harmless read with the same key worked, so the remote refuses this batch (or the key's refusal had just ended)`;
    return { ...failure, kind: 'forbidden', message };
  }
  if (verdict === 'key') return { ...failure, kind: 'credentials_refused', reason: 'http_403_key' };
  const message = `${failure.message}; whether the key or this batch was refused could not be told (the probe failed too): will try again`;
  return { ...failure, kind: 'unconfirmed_refusal', message };
}

async function delay(run: BatchRun, failure: Failure, error: unknown): Promise<SyncError> {
  if (failure.kind === 'credentials_refused') {
    // Not this batch's fault: no state change, no error stored, no attempt used; the process stops
    // taking jobs until the breaker closes, so the short delay costs nothing.
    run.deps.credentials?.refused();
    await release(run, { as: 'unchanged' });
    return new DeferError(
      KEY_REFUSED_RETRY_MS,
      `the remote refuses the API key; waiting for it to work again: ${failure.message}`,
      failure.kind,
      failure.reason,
    );
  }
  if (failure.kind === 'throttled') {
    const pauseMs = retryAfterOf(error) ?? run.deps.settings.throttlePauseMs;
    await run.deps.limiter?.pause(pauseMs);
    await release(run, { as: 'attempt_failed', error: failure.message, errorKind: failure.kind });
    return new DeferError(pauseMs, `remote throttled; the fleet pauses ${pauseMs} ms: ${failure.message}`, failure.kind, failure.reason);
  }
  // Waiting past SYNC_READ_LAG is worth an operator's notice: the setting is lower than the remote's lag.
  if (failure.reason === 'read_lag_exceeded') run.log.warn({ kind: failure.kind, reason: failure.reason, state: run.current.state }, failure.message);
  await release(run, { as: 'unchanged' });
  return error instanceof SyncError ? error : new DeferError(failure.delayMs ?? 1_000, failure.message, failure.kind, failure.reason);
}

/**
 * A failure that will not be retried: `failed` with the reason, or `needs_review` when the batch may
 * have a class (src/mapping/doubt.ts; decided by the release statement itself, from the row as it is).
 */
async function fail(run: BatchRun, failure: Failure, error: unknown, exhausted: boolean): Promise<SyncError> {
  if (failure.kind === 'ambiguous_create' || failure.kind === 'not_recorded') {
    // Already stored as needs_review (with its evidence), or nothing to store.
    await release(run, { as: 'unchanged' });
    return error instanceof SyncError ? error : new PermanentSyncError(failure.kind, failure.reason, failure.message, { cause: error });
  }
  const { state: from, classId, className } = run.current;
  const reason = `${exhausted ? 'attempts exhausted: ' : ''}${namingTarget(run, error, failure.message)}`;
  await release(run, { as: 'failed', error: reason, errorKind: failure.kind, review: mapping.doubtReview(className, reason) });
  const to = run.current.state;
  const what = to === 'needs_review' ? 'batch needs review (its add-class may have made a class)' : 'batch failed';
  run.log.warn({ err: error, kind: failure.kind, reason: failure.reason, from, to, classId }, `${what}: ${reason}`);
  return new PermanentSyncError(failure.kind, failure.reason, reason, { cause: error });
}

/**
 * A refusal need not say what was refused (an unknown institute is "instituteId: not an
 * institute..."): the stored reason names the institute or class the call was about (src/classroom/
 * operations.ts says which); an error of no remote call names the class.
 */
function namingTarget(run: BatchRun, error: unknown, message: string): string {
  const about = isClassroomError(error) ? aboutOf(error.operation) : 'class';
  const [what, id] = about === 'institute' ? ['institute', run.current.instituteId] : ['class', run.current.classId];
  return id && !message.includes(id) ? `${message} (${what} ${id})` : message;
}

async function release(run: BatchRun, end: mapping.RunEnd): Promise<void> {
  const to = end.as === 'failed' ? mapping.failedState(run.current) : run.current.state;
  try {
    const unstored = { ...run.unstored };
    await run.write(to, (events) => mapping.releaseLease(run.deps.db, run.lease, end, events, unstored), end.as === 'failed' ? { error: end.error } : {});
  } catch (error) {
    // The lease will simply expire; the original error matters more to the caller.
    const { kind, reason, message } = failureOf(error);
    run.log.error({ failure: { kind, reason, message } }, 'could not release the lease; it will expire on its own');
  }
}
