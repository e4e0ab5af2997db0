// One closed set of failure kinds, each with what the queue does, and the classification of any
// thrown value into it: no kind is left without an action, and no message is read to classify.
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { NotSentError, OutcomeUnknownError, RejectedError, ThrottledError } from '../../src/classroom/errors.ts';
import { serializeError } from '../../src/logging/logger.ts';
import { LeaseLostError } from '../../src/mapping/index.ts';
import { DeferError, NotVisibleYetError, PermanentSyncError, SyncError, type SyncFailureKind, failureOf, queueAction } from '../../src/sync/errors.ts';

const LINK = 'https://classes.example/join/66793e7d47c290929e8779e5a1b2c3d4';

describe('queueAction', () => {
  it('delays without an attempt what is nobody’s fault, retries what may succeed, stops what cannot', () => {
    const expected: Record<SyncFailureKind, string> = {
      not_sent: 'outlast',
      outcome_unknown: 'outlast',
      remote_inconsistent: 'retry',
      listing_refused: 'retry',
      unconfirmed_refusal: 'outlast',
      forbidden: 'retry',
      database: 'retry',
      internal: 'retry',
      throttled: 'delay',
      credentials_refused: 'delay',
      busy: 'delay',
      no_account: 'delay',
      slot_wait: 'delay',
      not_visible_yet: 'delay',
      lease_lost: 'delay',
      database_unavailable: 'delay',
      rejected: 'fail',
      class_unknown: 'fail',
      ambiguous_create: 'fail',
      not_recorded: 'fail',
    };
    for (const [kind, action] of Object.entries(expected)) expect(queueAction(kind as SyncFailureKind), kind).toBe(action);
  });
});

describe('failureOf', () => {
  it('keeps the kind and reason the remote boundary gave', () => {
    expect(failureOf(new OutcomeUnknownError('addClass timed out', { operation: 'addClass', reason: 'timeout' }))).toMatchObject({
      kind: 'outcome_unknown',
      reason: 'timeout',
    });
    expect(failureOf(new RejectedError('addClass failed with HTTP 403', { operation: 'addClass', httpStatus: 403 }))).toMatchObject({
      kind: 'rejected',
      reason: 'http_403',
    });
    expect(failureOf(new ThrottledError('429', { operation: 'getClass', bodyStatus: 429 }))).toMatchObject({ kind: 'throttled', reason: 'body_status_429' });
    expect(failureOf(new NotSentError('not sent', { operation: 'getClass', reason: 'connect_failed' }))).toMatchObject({
      kind: 'not_sent',
      reason: 'connect_failed',
    });
  });

  it("keeps the state machine's own kinds, with the delay of those that wait", () => {
    expect(failureOf(new NotVisibleYetError(250, 'not yet'))).toMatchObject({ kind: 'not_visible_yet', reason: 'read_lag', delayMs: 250 });
    expect(failureOf(new DeferError(900, 'busy'))).toMatchObject({ kind: 'busy', reason: 'lease_busy', delayMs: 900 });
    expect(failureOf(new PermanentSyncError('ambiguous_create', 'needs_review', 'two candidates'))).toMatchObject({ kind: 'ambiguous_create' });
    expect(failureOf(new SyncError('remote_inconsistent', 'class_id_mismatch', 'x'))).toMatchObject({
      kind: 'remote_inconsistent',
      reason: 'class_id_mismatch',
    });
    expect(failureOf(new LeaseLostError('B-1'))).toMatchObject({ kind: 'lease_lost', reason: 'newer_epoch' });
  });

  it('a failed statement is a database failure, and its message never carries the parameters (a join link)', () => {
    const cause = Object.assign(new Error('value too long for type character varying(10)'), { code: '22001', severity: 'ERROR' });
    const wrapped = new DrizzleQueryError('update batch_classes set join_link = $1', [LINK], cause);
    const failure = failureOf(wrapped);
    expect(failure).toMatchObject({ kind: 'database', reason: 'pg_22001' });
    expect(queueAction(failure.kind)).toBe('retry');
    expect(failure.message).toBe('PostgreSQL: value too long for type character varying(10)');
    expect(JSON.stringify(serializeError(wrapped))).not.toContain(LINK);
    expect(JSON.stringify(serializeError(wrapped))).toContain('value too long');
  });

  it('a server that ends the session (a restart) makes the database unavailable: a short delay, no attempt, no parameters in the message', () => {
    const cause = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' });
    const wrapped = new DrizzleQueryError('update batch_classes set join_link = $1', [LINK], cause);
    const failure = failureOf(wrapped);
    expect(failure).toMatchObject({ kind: 'database_unavailable', reason: 'pg_57P01' });
    expect(queueAction(failure.kind)).toBe('delay');
    expect(failure.delayMs).toBeGreaterThanOrEqual(1_000);
    expect(failure.delayMs).toBeLessThanOrEqual(2_000);
    expect(failure.message).toBe('PostgreSQL unavailable: terminating connection due to administrator command');
    expect(JSON.stringify(serializeError(wrapped))).not.toContain(LINK);
    expect(JSON.stringify(serializeError(wrapped))).toContain('administrator command');
  });

  it('a dropped connection without a code is still a database failure when drizzle wrapped it', () => {
    const wrapped = new DrizzleQueryError('select 1', [], new Error('Connection terminated unexpectedly'));
    expect(failureOf(wrapped)).toMatchObject({
      kind: 'database_unavailable',
      reason: 'pg_unavailable',
      message: 'PostgreSQL unavailable: Connection terminated unexpectedly',
    });
  });

  it('anything else is internal, named by its type', () => {
    expect(failureOf(new TypeError('x is undefined'))).toMatchObject({ kind: 'internal', reason: 'TypeError' });
    expect(failureOf('a string')).toMatchObject({ kind: 'internal', reason: 'string', message: 'a string' });
  });
});
