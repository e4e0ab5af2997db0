// The one table of the remote's operations (src/classroom/operations.ts): each operation's spec name,
// what a refusal of it is about, and its route, with the two settings the live service differs in.
import { describe, expect, it } from 'vitest';
import { type ClassroomOperation, aboutOf, remoteName, routeOf } from '../../src/classroom/operations.ts';

const SPEC = { addClassPath: '/addClass', editClassMethod: 'POST' } as const;
const LIVE = { addClassPath: '/teacher/addClass', editClassMethod: 'PUT' } as const;
const ALL: ClassroomOperation[] = ['addClass', 'editClass', 'getClass', 'listClasses'];

describe('the operations table', () => {
  it('names each operation as the spec does, for messages', () => {
    expect(ALL.map(remoteName)).toEqual(['add-class', 'edit-class', 'get-class', 'list-classes']);
  });

  it('says a refusal of add-class or the listing is about the institute, of edit-class or get-class about the class', () => {
    expect(ALL.map(aboutOf)).toEqual(['institute', 'class', 'class', 'institute']);
  });

  it("routes each operation as the spec does, add-class's path and edit-class's method as configured", () => {
    expect(ALL.map((op) => routeOf(op, SPEC, 'c1'))).toEqual([
      { method: 'POST', path: '/addClass' },
      { method: 'POST', path: '/teacher/editClass' },
      { method: 'GET', path: '/user/v2/classes/c1' },
      { method: 'GET', path: '/institutes/c1/classes' },
    ]);
    expect(routeOf('addClass', LIVE)).toEqual({ method: 'POST', path: '/teacher/addClass' });
    expect(routeOf('editClass', LIVE)).toEqual({ method: 'PUT', path: '/teacher/editClass' });
  });

  it('puts an id in the path as one encoded segment', () => {
    expect(routeOf('getClass', SPEC, 'a b').path).toBe('/user/v2/classes/a%20b');
  });
});
