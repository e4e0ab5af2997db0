// The remote Classroom Management Service. Four operations (named and routed in operations.ts),
// every header of the spec's section 5, one timeout per request and no retries: retrying is the
// queue's job, and only the state machine knows whether a retry could create a second class.
import { type Answer, parseData } from './answer.ts';
import { type CallOptions, type ClassroomHooks, createCall } from './call.ts';
import { createHttp } from './http.ts';
import { type ClassroomOperation, OutcomeUnknownError, RejectedError } from './errors.ts';
import { describeUnsafeId, isSafeId } from './ids.ts';
import { routeOf } from './operations.ts';
import { type ClassRecord, type InstituteListing, classRecordSchema, listingSchema } from './schemas.ts';
import type { ClassroomSettings } from './settings.ts';
import type { ClassFields, ClassValues } from '../mapping/index.ts';

export type { ClassroomSettings } from './settings.ts';

/**
 * A class to add: the batch's declared class fields (src/db/schema/class-fields.ts), `name` being the
 * class's rendered name, with its institute and the extra fields, sent as they are.
 */
export type AddClassInput = ClassFields & { instituteId: string; extra?: ClassValues['extra'] };

/**
 * What an edit-class changes besides the join link. The spec lists only `classId` and
 * `enableJoinMagicLink` ("other editable fields: not shown"); a hosted service also takes the class
 * fields and `archived` (archived classes are listed under `hiddenClasses`).
 */
export type ClassChanges = Partial<ClassFields> & { archived?: boolean; extra?: ClassValues['extra'] };

export type { CallOptions, CallRecord, ClassroomHooks } from './call.ts';

export interface ClassroomClient {
  addClass(input: AddClassInput, options?: CallOptions): Promise<{ classId: string; raw: unknown }>;
  enableJoinLink(classId: string, options?: CallOptions): Promise<void>;
  /**
   * Renames, re-subjects, archives or unarchives a class: sending the same edit again changes nothing
   * more. Answers with the name the remote kept, when its answer shows one (it may rewrite names).
   */
  editClass(classId: string, changes: ClassChanges, options?: CallOptions): Promise<{ keptName: string | undefined }>;
  getClass(classId: string, options?: CallOptions): Promise<ClassRecord>;
  listClasses(instituteId: string, query?: { searchTerm?: string }, options?: CallOptions): Promise<InstituteListing>;
}

export function createClassroomClient(settings: ClassroomSettings, hooks: ClassroomHooks = {}): ClassroomClient {
  const http = createHttp(settings);
  const call = createCall(settings.timeoutMs, hooks);

  return {
    async addClass(input, options) {
      const { extra, ...fields } = input;
      const json = { ...extra, ...fields };
      return call('addClass', (signal) => http({ ...routeOf('addClass', settings), json, signal }), options, createdClass);
    },

    async enableJoinLink(classId, options) {
      assertSafeId('editClass', classId);
      await call(
        'editClass',
        (signal) => http({ ...routeOf('editClass', settings), json: { classId, enableJoinMagicLink: true }, signal }),
        options,
        () => undefined,
      );
    },

    async editClass(classId, changes, options) {
      assertSafeId('editClass', classId);
      const { extra, ...named } = changes;
      const json = { ...extra, ...Object.fromEntries(Object.entries(named).filter(([, v]) => v !== undefined)), classId };
      return call('editClass', (signal) => http({ ...routeOf('editClass', settings), json, signal }), options, keptName);
    },

    async getClass(classId, options) {
      assertSafeId('getClass', classId);
      return call(
        'getClass',
        (signal) => http({ ...routeOf('getClass', settings, classId), searchParams: { full: 'true' }, signal }),
        options,
        (answer) => parseData('getClass', answer, classRecordSchema),
      );
    },

    async listClasses(instituteId, query = {}, options) {
      assertSafeId('listClasses', instituteId);
      const searchParams: Record<string, string> = {};
      if (query.searchTerm) searchParams.searchTerm = query.searchTerm;
      return call(
        'listClasses',
        (signal) => http({ ...routeOf('listClasses', settings, instituteId), searchParams, signal }),
        options,
        (answer) => parseData('listClasses', answer, listingSchema),
      );
    },
  };
}

/** The ClassID in add-class's answer (at `data._id`, or at the top level). */
function createdClass(answer: Answer): { classId: string; raw: unknown } {
  const classId = pickClassId(answer);
  if (!isSafeId(classId)) {
    // The class was probably created, but we cannot use this id: the caller must resolve by reading.
    throw new OutcomeUnknownError(`addClass answered with an unusable class id: ${describeUnsafeId(classId)}`, {
      operation: 'addClass',
      httpStatus: answer.httpStatus,
      reason: 'unusable_class_id',
    });
  }
  return { classId, raw: answer.data };
}

/** The name an edit-class answer says the class now has (a remote may rewrite what it was sent). */
function keptName(answer: Answer): { keptName: string | undefined } {
  const name = (answer.data as { name?: unknown } | null | undefined)?.name;
  return { keptName: typeof name === 'string' ? name : undefined };
}

function pickClassId(answer: Answer): unknown {
  const data = answer.data as { _id?: unknown } | undefined;
  return data && typeof data === 'object' && '_id' in data ? data._id : answer.body._id;
}

function assertSafeId(operation: ClassroomOperation, id: string): void {
  if (!isSafeId(id)) throw new RejectedError(`${operation} not sent: ${describeUnsafeId(id)}`, { operation, reason: 'unsafe_id' });
}
