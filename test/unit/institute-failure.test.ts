// What a reconciliation pass says about an institute it could not read: a refusal names the way out,
// anything else does not pretend to be permanent.
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, RejectedError } from '../../src/classroom/errors.ts';
import { describeInstituteFailure } from '../../src/reconcile/institute-failure.ts';

const refused = new RejectedError('listClasses failed with HTTP 403: not an institute this integrator may manage', {
  operation: 'listClasses',
  httpStatus: 403,
});
const batches = { count: 2, batchIds: ['B-7', 'B-9'] };

describe('describeInstituteFailure', () => {
  it("a refused institute: the remote's answer, its batches, and the abandon command for exactly them", () => {
    const summary = describeInstituteFailure({ instituteId: 'X', error: refused, isDefault: false, batches });
    expect(summary).toMatchObject({ instituteId: 'X', refused: true, httpStatus: 403, mappings: 2, batchIds: ['B-7', 'B-9'] });
    expect(summary.error).toBe(
      'institute X: the remote refused its listing (listClasses failed with HTTP 403: not an institute this integrator may manage); ' +
        '2 batch(es) of it were not reconciled: B-7 B-9. If the remote will never accept this institute, give them up: classroom-sync abandon --institute X B-7 B-9',
    );
  });

  it('the default institute refused: points at the setting, since abandoning would not stop it being read', () => {
    const { error } = describeInstituteFailure({ instituteId: 'X', error: refused, isDefault: true, batches });
    expect(error).toContain('it is CLASSROOM_INSTITUTE_ID: check that setting and the credentials with `classroom-sync check`');
    expect(error).not.toContain('abandon');
  });

  it('a transient failure (5xx, timeout) is reported without suggesting to give anything up', () => {
    const error = new OutcomeUnknownError('listClasses failed with HTTP 503', { operation: 'listClasses', httpStatus: 503 });
    const summary = describeInstituteFailure({ instituteId: 'X', error, isDefault: false, batches });
    expect(summary).toMatchObject({ refused: false, httpStatus: 503 });
    expect(summary.error).toBe('institute X: its listing failed (listClasses failed with HTTP 503); 2 batch(es) of it were not reconciled: B-7 B-9');
  });

  it('more batches than it names: says so, and where to list them all', () => {
    const { error } = describeInstituteFailure({ instituteId: 'X', error: refused, isDefault: false, batches: { count: 120, batchIds: ['B-1', 'B-2'] } });
    expect(error).toContain('120 batch(es) of it were not reconciled: B-1 B-2 (the first 2; GET /v1/batches?instituteId=X lists all)');
  });

  it('more batches than were counted: says "more than", and the summary that its count is a floor', () => {
    const batches = { count: 1_000, more: true, batchIds: ['B-1', 'B-2'] };
    const summary = describeInstituteFailure({ instituteId: 'X', error: refused, isDefault: false, batches });
    expect(summary).toMatchObject({ mappings: 1_000, mappingsAtLeast: true });
    expect(summary.error).toContain('more than 1,000 batch(es) of it were not reconciled: B-1 B-2 (the first 2; GET /v1/batches?instituteId=X lists all)');
  });
});
