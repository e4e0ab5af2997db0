// Shapes the sandbox sends, following section 2 of the spec and the field notes.
import { readable } from './replica.ts';
import type { ClassType, StoredClass } from './store.ts';

export interface RecordContext {
  namespace: string;
  /** The teacher every class belongs to (the integrator's user). */
  teacher: { _id: string; name: string };
}

/** `GET /user/v2/classes/:id?full=true`: every field of spec section 2; `joinMagicLink` is "" until enabled. */
export function fullRecord(r: StoredClass, ctx: RecordContext): Record<string, unknown> {
  const createdAt = new Date(r.createdAt).toISOString();
  return {
    ...r.extra,
    _id: r._id,
    namespace: ctx.namespace,
    pendingRequest: [],
    joinedRequest: [],
    coTeacherRequests: [],
    coTeachers: [],
    archived: r.archived,
    disableReminder: false,
    zoomLink: { join_url: '', mettingEnded: false, startTime: null, mettingId: '' },
    settings: {
      disableStudentDiscussions: false,
      disableStudentComments: false,
      disableScreenCapture: false,
      disableWebSdk: false,
      lockClassroom: false,
      lockAfter: null,
      openClassroom: false,
      admissionsDisabled: false,
      autoAccept: false,
      magicJoinTokenConfig: r.magicJoinToken ? { ...r.magicJoinToken } : {},
    },
    subject: r.subject,
    timing: [],
    userId: { profilePicture: '', _id: ctx.teacher._id, name: ctx.teacher.name, phoneNumber: '' },
    name: r.name,
    classNumber: r.classNumber,
    classType: r.classType,
    timingVersion: 1,
    schedule: { occurrences: [], _id: r.scheduleId, createdAt },
    thumbnail: '',
    suspendedStudents: [],
    createdAt,
    joinMagicLink: r.joinMagicLink,
  };
}

/** Without `full=true`, and the add/edit responses: no join link, no token config. */
export function shortRecord(r: StoredClass, ctx: RecordContext): Record<string, unknown> {
  return {
    ...r.extra,
    _id: r._id,
    namespace: ctx.namespace,
    name: r.name,
    subject: r.subject,
    classType: r.classType,
    classNumber: r.classNumber,
    archived: r.archived,
    thumbnail: '',
    createdAt: new Date(r.createdAt).toISOString(),
  };
}

export interface ListingQuery {
  searchTerm?: string | undefined;
  classType?: ClassType | undefined;
  showCoTeachers: boolean;
  includeIds: boolean;
  /** Classes created after this instant are not listed yet (the listing lags behind creation). */
  createdNoLaterThan: number;
  /** With replica lag: classes reads do not know yet at this instant are not listed either. */
  readableAt?: number | undefined;
}

export interface Listing {
  classes: Record<string, unknown>[];
  pendingClasses: Record<string, unknown>[];
  hiddenClasses: Record<string, unknown>[];
}

/** One pass over the institute's classes; plain object literals keep 100k items cheap. */
export function buildListing(classes: Iterable<StoredClass>, q: ListingQuery): Listing {
  const listing: Listing = { classes: [], pendingClasses: [], hiddenClasses: [] };
  const needle = q.searchTerm ? q.searchTerm.toLowerCase() : undefined;
  for (const r of classes) {
    if (r.createdAt > q.createdNoLaterThan) continue;
    if (q.readableAt !== undefined && !readable(r, q.readableAt)) continue;
    if (q.classType && r.classType !== q.classType) continue;
    if (needle !== undefined && !r.name.toLowerCase().includes(needle)) continue;
    if (r.pending && !r.archived) {
      const item = { subject: r.subject, name: r.name, classNumber: r.classNumber, thumbnail: '' };
      listing.pendingClasses.push(q.includeIds ? { _id: r._id, ...item } : item);
      continue;
    }
    const item: Record<string, unknown> = q.includeIds ? { _id: r._id } : {};
    item.pendingRequest = [];
    item.joinedRequest = [];
    item.subject = r.subject;
    item.name = r.name;
    item.classNumber = r.classNumber;
    item.thumbnail = '';
    if (q.showCoTeachers) item.coTeachers = [];
    if (r.archived) {
      item.archived = true;
      listing.hiddenClasses.push(item);
    } else {
      listing.classes.push(item);
    }
  }
  return listing;
}
