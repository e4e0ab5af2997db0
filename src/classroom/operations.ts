// The remote's operations, each named once. `ClassroomOperation` is the name in code, audit rows,
// metrics and errors; everything else about an operation is read from OPERATIONS, keyed by it, so
// a new operation is one row here (and its method in client.ts), never another spelling elsewhere.
// src/sandbox keeps its own routes on purpose: sharing this table would make it agree with our bugs.
import { idSegment } from './ids.ts';
import type { ClassroomSettings } from './settings.ts';

export type ClassroomOperation = 'addClass' | 'editClass' | 'getClass' | 'listClasses';

/** Where a call is sent, relative to the base URL. */
export interface Route {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
}

/** The settings a route may depend on: the live service differs from the spec there (docs/live-service.md). */
type RouteSettings = Pick<ClassroomSettings, 'addClassPath' | 'editClassMethod'>;

interface OperationFacts {
  /** The spec's name for it, as messages, logs and the docs say it ("edit-class"). */
  readonly remoteName: string;
  /** What a refusal of it is about: the institute it was sent for, or the class it names. */
  readonly about: 'institute' | 'class';
  /** `id`: the class or institute the path names (add-class's path names none). */
  readonly route: (settings: RouteSettings, id: string) => Route;
}

const OPERATIONS: { readonly [O in ClassroomOperation]: OperationFacts } = {
  addClass: { remoteName: 'add-class', about: 'institute', route: (s) => ({ method: 'POST', path: s.addClassPath }) },
  editClass: { remoteName: 'edit-class', about: 'class', route: (s) => ({ method: s.editClassMethod, path: '/teacher/editClass' }) },
  getClass: { remoteName: 'get-class', about: 'class', route: (_, id) => ({ method: 'GET', path: `/user/v2/classes/${idSegment(id)}` }) },
  listClasses: { remoteName: 'list-classes', about: 'institute', route: (_, id) => ({ method: 'GET', path: `/institutes/${idSegment(id)}/classes` }) },
};

/** The spec's hyphenated name of `operation`, for messages ("edit-class"). */
export function remoteName(operation: ClassroomOperation): string {
  return OPERATIONS[operation].remoteName;
}

/** Whether a refusal of `operation` is about the institute it was sent for or the class it names. */
export function aboutOf(operation: ClassroomOperation): 'institute' | 'class' {
  return OPERATIONS[operation].about;
}

/** The method and path `operation` is sent on, with these settings, for the class or institute `id`. */
export function routeOf(operation: ClassroomOperation, settings: RouteSettings, id = ''): Route {
  return OPERATIONS[operation].route(settings, id);
}
