// When a read of our own write is worth a call. The key's budget is the binding constraint on the
// live service: a read the remote answers "not yet" (a 404 for a class our add-class made, a class
// with no join link after our edit-class enabled it) is a call taken from a new batch. So a read
// waits until the account's learned lag says it will find the write (src/sync/lag-monitor.ts:
// shared by the fleet), and a run that is early ends there, as a delayed job that frees its worker
// slot and sends nothing; it is never polled for inside a run. A read that still finds nothing
// lengthens the wait for every later batch and is read again no sooner than its own age again.
//
// Two kinds of read are scheduled:
// - `class`: the first calls on a class our add-class made (edit-class, or a change's get-class or
//   edit-class), while the batch is `created`, timed from the add-class answer (`createAckedAt`);
// - `link`: get-class for the join link, while `link_enabled`, timed from the edit that enabled it.
// An adopted class was listed already, so it is read at once; so is everything after these steps.
import type { BatchState } from '../mapping/index.ts';
import { NotVisibleYetError } from './errors.ts';
import type { ReadKind } from './lag-monitor.ts';
import { READ_LAG_PATIENCE } from './read-lag.ts';
import type { ReadTiming, StepRun } from './run-handle.ts';

export type { ReadTiming };

/**
 * A read this close to its time goes now: a trip through the queue costs more than it saves, and the
 * run's view of the database's clock trails it by the lease grant's answer (a write it just made
 * looks a few ms in the future).
 */
const ON_TIME_MS = 100;

/** The state in which each kind of read is scheduled. */
const SCHEDULED_IN: Record<ReadKind, BatchState> = { class: 'created', link: 'link_enabled' };

/** When the batch's write of `kind` was made, if a read of it is scheduled now. */
function writtenAt(run: StepRun, kind: ReadKind): Date | null {
  if (run.current.state !== SCHEDULED_IN[kind]) return null;
  return kind === 'class' ? run.current.createAckedAt : run.current.linkEnabledAt;
}

/**
 * Before a read of `kind`: its timing when it is due, undefined when it is not scheduled; throws a
 * NotVisibleYetError (nothing sent, no attempt used) when it is too early.
 */
export async function readDue(run: StepRun, kind: ReadKind): Promise<ReadTiming | undefined> {
  const since = writtenAt(run, kind);
  const monitor = run.deps.lagMonitor;
  if (!since || !monitor) return undefined;
  const delayMs = await monitor.readDelay(kind);
  const earlyByMs = since.getTime() + delayMs - run.lag.now();
  if (delayMs > 0 && earlyByMs > ON_TIME_MS) {
    const what = kind === 'class' ? `class ${run.current.classId}` : `the join link of class ${run.current.classId}`;
    const message = `${what} is read ${Math.round(delayMs)} ms after its write, when the remote has shown most of ours (the account's measured lag); waiting ${Math.round(earlyByMs)} ms`;
    throw new NotVisibleYetError(earlyByMs, message, 'read_schedule');
  }
  return { kind, since, delayMs };
}

/**
 * After a scheduled read: whether it found the write moves the account's schedule; returns the new
 * delay. Only reads within the read-lag patience count (a class gone for good is no lag).
 * `measuring`: no call failed since this run's add-class answer, so a success is a tight bound.
 */
export async function readDone(run: StepRun, timing: ReadTiming | undefined, visible: boolean, measuring: boolean): Promise<number> {
  const monitor = run.deps.lagMonitor;
  if (!timing || !monitor) return 0;
  const ageMs = run.lag.now() - timing.since.getTime();
  if (ageMs > READ_LAG_PATIENCE * run.deps.settings.readLagMs) return timing.delayMs;
  // Settle evidence is the class's visibility: a failure is a lower bound, a success an upper one
  // when it came when scheduled (a read put off by a retry's backoff would overstate the lag).
  const sample = timing.kind === 'class' && (!visible || measuring || ageMs <= 2 * timing.delayMs + 2_000);
  return monitor.readOutcome(timing.kind, ageMs, visible, sample, run.current.classId ?? '');
}
