// Classroom clients for the model-based test: the real client (HTTP to the sandbox) wrapped so a
// run can be paused mid-way (a killed worker, a zombie), parked at gates a scheduler releases (two
// paths racing), and observed (every request a run sends is checked as it leaves).
import type { CallOptions, ClassroomClient } from '../../src/classroom/client.ts';
import type { SandboxOperation } from '../../src/sandbox/index.ts';

/** Where a runner stops for good (a crash) or for a while (a paused process: a "zombie"). */
export type PauseAt =
  | 'beforeCall' // before the operation is attempted: nothing written for it, nothing sent
  | 'afterFencedWrite' // after the recovery point is written, before the request leaves
  | 'afterEffect'; // the request finished (or failed): the remote may have changed, nothing recorded

/** One call of a client, handed to a wrapper: the operation and how to send it (with options). */
type Around = <R>(op: SandboxOperation, send: (options?: CallOptions) => Promise<R>, options?: CallOptions) => Promise<R>;

/** `real` with `around` put around every call. */
export function wrapClient(real: ClassroomClient, around: Around): ClassroomClient {
  return {
    addClass: (input, options) => around('addClass', (o) => real.addClass(input, o), options),
    enableJoinLink: (classId, options) => around('editClass', (o) => real.enableJoinLink(classId, o), options),
    editClass: (classId, changes, options) => around('editClass', (o) => real.editClass(classId, changes, o), options),
    getClass: (classId, options) => around('getClass', (o) => real.getClass(classId, o), options),
    listClasses: (instituteId, query, options) => around('listClasses', (o) => real.listClasses(instituteId, query, o), options),
  };
}

/** Awaits `call`, then runs `after`, then answers as the call did. */
async function thenAnswer<R>(call: Promise<R>, after: () => Promise<void>): Promise<R> {
  const outcome = await call.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await after();
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}

/** A wrapper of a client whose first call of `operation` stops at `at` until `resume()`. */
export function pausingClient(operation: SandboxOperation, at: PauseAt) {
  let armed = true;
  let reached!: () => void;
  let resume!: () => void;
  const reachedP = new Promise<void>((r) => (reached = r));
  const released = new Promise<void>((r) => (resume = r));
  const pause = async () => {
    reached();
    await released;
  };
  let signal: AbortSignal | undefined;
  const around: Around = async (op, send, options) => {
    if (!armed || op !== operation) return send(options);
    armed = false;
    signal = options?.signal;
    if (at === 'beforeCall') {
      await pause();
      return send(options);
    }
    if (at === 'afterFencedWrite') {
      const beforeSend = async () => {
        await options?.beforeSend?.();
        await pause();
      };
      return send({ ...options, beforeSend });
    }
    return thenAnswer(send(options), pause);
  };
  /** The paused call's signal: the run's, aborted once its heartbeat finds the lease gone. */
  const aborted = () => signal?.aborted === true;
  return { wrap: (real: ClassroomClient) => wrapClient(real, around), reached: reachedP, resume, aborted };
}

/** The real client, parked at `gate` before each call and after its answer (a scheduler picks who goes on). */
export function gatedClient(real: ClassroomClient, gate: (label: string, signal: AbortSignal | undefined) => Promise<void>): ClassroomClient {
  return wrapClient(real, async (op, send, options) => {
    await gate(`before ${op}`, options?.signal);
    return thenAnswer(send(options), () => gate(`after ${op}`, options?.signal));
  });
}

/** What an observer is told of each request a run sends, right before it leaves (after the run's own checks). */
export interface CallObserver {
  /** `signal`: the run's own; a request whose signal is aborted by then is not sent after all. */
  leaving(op: SandboxOperation, signal: AbortSignal | undefined): Promise<void>;
}

/** The real client; `observer.leaving` runs last in `beforeSend`, when nothing can stop the request any more. */
export function observedClient(real: ClassroomClient, observer: CallObserver): ClassroomClient {
  return wrapClient(real, (op, send, options) => {
    const beforeSend = async () => {
      await options?.beforeSend?.();
      await observer.leaving(op, options?.signal);
    };
    return send({ ...options, beforeSend });
  });
}
