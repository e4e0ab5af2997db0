// The demo starts every run from empty: its own database's tables and its own queue keys are
// cleared first, so a run reports (and the dashboard shows) only the batches it published, and the
// demo database does not grow run after run. Only ever the demo's: the names must end in
// `_demo` / `-demo`, which demoSettings guarantees, and a demo still serving is never cleared under.
import { Queue } from 'bullmq';
import pg from 'pg';
import type { Cluster } from 'ioredis';
import { type Redis, createRedis, isCluster } from '../redis/connection.ts';
import { SYNC_QUEUE } from '../sync/queue.ts';

export class DemoBusyError extends Error {
  override readonly name = 'DemoBusyError';
}

export interface DemoData {
  databaseUrl: string;
  redisUrl: string;
  queuePrefix: string;
}

/** Clears the demo's tables and queue keys; throws DemoBusyError while another demo uses them. */
export async function resetDemoData(data: DemoData): Promise<void> {
  const database = decodeURIComponent(new URL(data.databaseUrl).pathname.replace(/^\//, ''));
  if (!database.endsWith('_demo') || !data.queuePrefix.endsWith('-demo')) {
    throw new Error(`refusing to clear ${database} / ${data.queuePrefix}: only the demo's own database and queue prefix are ever cleared`);
  }
  // Reachable: the demo's preflight has just said so.
  const redis = createRedis(data.redisUrl, 'worker');
  try {
    if (await workersOnline(redis, data.queuePrefix)) {
      throw new DemoBusyError(
        `another demo is running on database ${database} and queue prefix ${data.queuePrefix}: stop it (Ctrl-C) first, or give this one its own QUEUE_PREFIX and DATABASE_URL`,
      );
    }
    await truncateTables(data.databaseUrl);
    await deleteKeys(redis, `${data.queuePrefix}:`);
  } finally {
    redis.disconnect();
  }
}

/** Whether a worker (another demo's) is connected to the demo's sync queue right now. */
async function workersOnline(redis: Redis, prefix: string): Promise<boolean> {
  const queue = new Queue(SYNC_QUEUE, { connection: redis, prefix });
  try {
    return (await queue.getWorkersCount()) > 0;
  } catch {
    // CLIENT LIST may be refused (managed Redis); the demo's data is its own, so go on.
    return false;
  } finally {
    await queue.close();
  }
}

/** Every table of the public schema (whatever the migrations made), not the migrations' own record. */
async function truncateTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>("select quote_ident(tablename) as name from pg_tables where schemaname = 'public'");
    if (rows.length > 0) await client.query(`truncate ${rows.map((r) => `public.${r.name}`).join(', ')} restart identity cascade`);
  } finally {
    await client.end();
  }
}

async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const nodes = isCluster(redis) ? (redis as Cluster).nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
      // One DEL per key: on a cluster, the keys of one command must share a slot.
      const batch = node.pipeline();
      for (const key of keys) batch.del(key);
      await batch.exec();
      cursor = next;
    } while (cursor !== '0');
  }
}
