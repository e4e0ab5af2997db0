// One remote call, whatever the operation: the shared rate limit (and the credentials breaker) first,
// then the caller's last check, one timeout for headers and body alike, and a record of how it
// ended for metrics and the batch's audit trail. No retries: only the state machine knows whether
// sending again could create a second class.
import { type Answer, readAnswer } from './answer.ts';
import { type ClassroomError, type ClassroomOperation, type FailureReason, NotSentError, isClassroomError } from './errors.ts';
import { LaneDeferredError, RateLimitWaitTooLongError } from '../ratelimit/errors.ts';
import type { QueueLane } from '../mapping/index.ts';
import { latestSendMs } from '../ratelimit/limiter.ts';
import { type Clock, monotonicClock } from '../support/clock.ts';
import { transportError } from './transport.ts';

export interface CallRecord {
  operation: ClassroomOperation;
  outcome: 'ok' | ClassroomError['kind'];
  httpStatus: number | undefined;
  bodyStatus: number | undefined;
  durationMs: number;
  /** The failure's message (safe to store: never credentials or join links). */
  error?: string | undefined;
}

export interface ClassroomHooks {
  /**
   * Awaited before every request (the shared rate limit). A throw means the request is not sent. It
   * may resolve with the time its slot came due (by `clock`): lateness is measured from there, so a
   * slot slept past is not forgiven again after the wait (by default, from when it resolved).
   */
  beforeCall?: (operation: ClassroomOperation, lane: QueueLane | undefined) => Promise<number | undefined>;
  /** Told about every finished call (metrics, audit). Must not throw. */
  afterCall?: (call: CallRecord) => void;
  /**
   * How long after its slot a request may still leave (the limiter's headroom over the remote's
   * window, see ratelimit/limiter.ts; default a minute's); a later one takes a fresh slot.
   */
  latestSendMs?: number;
  /** What a slot's time and a call's duration are read by (default: the monotonic clock, as a `slotReady`'s time is). */
  clock?: Pick<Clock, 'now'>;
}

export interface CallOptions {
  /**
   * Runs after the rate-limit slot is granted and right before the request leaves. The sync
   * machine re-checks its lease here; whatever it throws propagates unchanged (nothing was sent).
   */
  beforeSend?: () => Promise<void>;
  /** Told about this call once it finished (the batch's audit trail). Must not throw. */
  observe?: (call: CallRecord) => void;
  /**
   * A rate-limit slot reserved for this call already: wait for it instead of reserving another. It
   * resolves with the time the slot came due (by the hooks' clock, `performance.now()` by default): a call that reaches the remote
   * more than the limiter's headroom after that takes a fresh slot.
   */
  slotReady?: Promise<number>;
  /** The lane the call is made for (the rate limit's order of precedence; default live). */
  lane?: QueueLane;
  /**
   * The caller's own reason to stop: once aborted, the request is not sent, or is given up on at
   * once (the sync run lost its lease). Its reason is what a request not yet sent throws.
   */
  signal?: AbortSignal;
}

export type Call = <T>(
  operation: ClassroomOperation,
  send: (signal: AbortSignal) => Promise<Response>,
  options: CallOptions | undefined,
  interpret: (answer: Answer) => T,
) => Promise<T>;

export function createCall(timeoutMs: number, hooks: ClassroomHooks): Call {
  return async function call(operation, send, options = {}, interpret) {
    await beforeSending(operation, hooks, options);
    options.signal?.throwIfAborted();
    const report = (record: CallRecord) => {
      hooks.afterCall?.(record);
      options.observe?.(record);
    };
    const clock = hooks.clock ?? monotonicClock;
    const started = clock.now();
    let httpStatus: number | undefined;
    let bodyStatus: number | undefined;
    try {
      // One signal for headers and body alike: a server that stalls mid-body is a timeout too.
      const deadline = AbortSignal.timeout(timeoutMs);
      const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
      const response = await send(signal).catch((error: unknown) => {
        throw transportError(operation, error, timeoutMs);
      });
      httpStatus = response.status;
      const answer = await readAnswer(operation, response);
      bodyStatus = typeof answer.body.status === 'number' ? answer.body.status : undefined;
      // `interpret` runs inside the call, so an answer we cannot use is reported as the failure it is.
      const result = interpret(answer);
      report({ operation, outcome: 'ok', httpStatus, bodyStatus, durationMs: clock.now() - started });
      return result;
    } catch (error) {
      const classified = error as ClassroomError;
      const durationMs = clock.now() - started;
      const statuses = { httpStatus: classified.httpStatus ?? httpStatus, bodyStatus: classified.bodyStatus ?? bodyStatus };
      report({ operation, outcome: classified.kind, ...statuses, durationMs, error: classified.message });
      throw error;
    }
  };
}

/**
 * The shared rate limit, then the caller's last check (the sync machine writes `creating` there,
 * before an add-class). A request sent longer than the limiter's headroom after its slot could make
 * the remote count R + 1 calls in some minute: a slot reserved earlier that came due too long ago
 * (the run's PostgreSQL statements were slow), or a check that took that long, means a fresh slot;
 * after the check, the check runs again, since that wait may be long. Once: a second slow check is
 * sent as it is, rather than never.
 */
async function beforeSending(operation: ClassroomOperation, hooks: ClassroomHooks, options: CallOptions): Promise<void> {
  const { lane } = options;
  let slotAt = await (options.slotReady ?? takeSlot(operation, hooks, lane));
  const latest = hooks.latestSendMs ?? latestSendMs();
  const clock = hooks.clock ?? monotonicClock;
  const late = () => hooks.beforeCall !== undefined && clock.now() - slotAt > latest;
  if (late()) slotAt = await takeSlot(operation, hooks, lane);
  if (!options.beforeSend) return;
  await options.beforeSend();
  if (!late()) return;
  // Past the check, an add-class is under way: its intent is written.
  await takeSlot(operation, hooks, lane === 'live' ? 'under_way' : lane);
  await options.beforeSend();
}

/** Waits for a slot of the shared rate limit (when there is one); resolves with the time it was had. */
async function takeSlot(operation: ClassroomOperation, hooks: ClassroomHooks, lane: QueueLane | undefined): Promise<number> {
  try {
    const dueAt = await hooks.beforeCall?.(operation, lane);
    return dueAt ?? (hooks.clock ?? monotonicClock).now();
  } catch (error) {
    // A classified refusal (the credentials breaker is open) keeps its kind.
    if (isClassroomError(error)) throw error;
    throw new NotSentError(`${operation} not sent: ${(error as Error).message}`, { operation, reason: noSlotReason(error), cause: error });
  }
}

/** Why the limiter gave no slot: a full budget, a lower lane yielding, or a limiter that could not be asked. */
function noSlotReason(error: unknown): FailureReason {
  if (error instanceof RateLimitWaitTooLongError) return 'rate_limit_full';
  if (error instanceof LaneDeferredError) return 'lane_deferred';
  return 'limiter_unavailable';
}
