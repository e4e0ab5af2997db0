// What a pass says about an institute whose listing it could not read. The remote refusing an
// institute (403/404) is not transient: every pass will fail the same way until its batches are given
// up, so the message names the batches and the command that closes the matter.
import { isClassroomError } from '../classroom/errors.ts';
import { AccountUnavailableError } from './accounts.ts';
import type { UnreadInstitute } from './types.ts';

export interface InstituteFailure {
  instituteId: string;
  error: unknown;
  /** CLASSROOM_INSTITUTE_ID: always reconciled, so abandoning its batches would not help. */
  isDefault: boolean;
  /**
   * Its batches the pass could not look at (abandoned ones excluded), and the first few ids; `more`:
   * it has more than `count` (src/mapping/batches-of-institute.ts counts only so far).
   */
  batches: { count: number; more?: boolean; batchIds: readonly string[] };
}

/** 403 or 404 on the listing: the remote does not know the institute, or does not let us see it. */
export function isRefusal(error: unknown): boolean {
  return isClassroomError(error) && error.kind === 'rejected' && (error.httpStatus === 403 || error.httpStatus === 404);
}

export function describeInstituteFailure(f: InstituteFailure): UnreadInstitute {
  const message = f.error instanceof Error ? f.error.message : String(f.error);
  const httpStatus = isClassroomError(f.error) ? f.error.httpStatus : undefined;
  const refused = isRefusal(f.error);
  const { count, batchIds } = f.batches;
  const more = f.batches.more === true;
  const summary = {
    instituteId: f.instituteId,
    mappings: count,
    ...(more ? { mappingsAtLeast: true as const } : {}),
    remoteClasses: 0,
    itemsWithoutId: 0,
    refused,
    batchIds: [...batchIds],
  };
  const what =
    f.error instanceof AccountUnavailableError
      ? `not read: ${message}`
      : refused
        ? `the remote refused its listing (${message})`
        : `its listing failed (${message})`;
  let error = `institute ${f.instituteId}: ${what}`;
  if (refused && f.isDefault) {
    error += '; it is CLASSROOM_INSTITUTE_ID: check that setting and the credentials with `classroom-sync check`';
  } else if (count > 0) {
    const shown = batchIds.join(' ');
    const rest = more || count > batchIds.length ? ` (the first ${batchIds.length}; GET /v1/batches?instituteId=${f.instituteId} lists all)` : '';
    error += `; ${more ? `more than ${count.toLocaleString('en')}` : count} batch(es) of it were not reconciled: ${shown}${rest}`;
    if (refused) error += `. If the remote will never accept this institute, give them up: classroom-sync abandon --institute ${f.instituteId} ${shown}`;
  }
  return { ...summary, ...(httpStatus === undefined ? {} : { httpStatus }), error };
}
