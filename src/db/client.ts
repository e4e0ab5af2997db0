import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import * as schema from './schema/index.ts';

/** What `drizzle(pool)` returns: the pool stays reachable as `$client` (see `runPrepared`). */
export type Db = NodePgDatabase<typeof schema> & { $client: pg.Pool };

export interface Database {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

export function createDatabase(url: string, options: { max?: number; applicationName?: string; queryTimeoutMs?: number } = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'classroom-sync',
    // A dead connection must surface as an error on the next query, not hang a job until its lease ends.
    connectionTimeoutMillis: 10_000,
    // No query timeout means none on the server either: a statement_timeout set on the database or role
    // would cancel what must run to its end (migrate's index builds). pg sends no statement_timeout of 0.
    ...(options.queryTimeoutMs === 0 ? { options: '-c statement_timeout=0' } : { query_timeout: options.queryTimeoutMs ?? 30_000 }),
  });
  // A connection the server drops (restart, pg_terminate_backend) emits 'error'. The pool listens
  // on idle clients only; a checked-out client between two statements of a transaction has no
  // listener and would end the process. The query in flight still rejects, which is what we act on.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  const db = drizzle(pool, { schema });
  let closed = false;
  return {
    db,
    pool,
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  };
}
