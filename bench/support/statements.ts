import pg from 'pg';

/**
 * Counts every statement sent by any pg client of this process from now on (they still run as
 * usual). Call it once per process: each call wraps the client's `query` again.
 */
export function countStatements(): () => number {
  let count = 0;
  const proto = pg.Client.prototype as unknown as { query: (a: unknown, b: unknown, c: unknown) => unknown };
  const original = proto.query;
  // Fixed arity (pg's query takes at most three): a rest-and-apply wrapper cost the measured worker
  // a few microseconds a statement.
  proto.query = function (this: unknown, a: unknown, b: unknown, c: unknown) {
    count += 1;
    return original.call(this, a, b, c);
  };
  return () => count;
}
