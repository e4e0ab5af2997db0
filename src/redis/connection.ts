// Every Redis connection of the process is made here: one server (redis://) or a Redis Cluster
// (redis+cluster://host:port,host:port). BullMQ and the rate limiter take either.
import { Cluster, type ClusterOptions, Redis as Standalone, type RedisOptions } from 'ioredis';
import { type ClusterTarget, isClusterUrl, parseClusterUrl } from './url.ts';

/** A connection to one Redis server or to a Redis Cluster. */
export type Redis = Standalone | Cluster;

/**
 * - worker: BullMQ workers need `maxRetriesPerRequest: null` (blocking commands must wait out a
 *   reconnect or a cluster failover);
 * - producer: fails fast instead, because Postgres already holds every accepted batch;
 * - probe: one bounded try, no reconnects (the caller calls `connect()`), for `check` and `demo`.
 */
export type RedisRole = 'worker' | 'producer' | 'probe';

export function createRedis(url: string, role: RedisRole, extra: RedisOptions = {}): Redis {
  const options: RedisOptions = { connectionName: `classroom-sync-${role}`, ...roleOptions(role), ...extra };
  const redis = isClusterUrl(url) ? createCluster(parseClusterUrl(url), role, options) : new Standalone(url, options);
  // Reconnects are ioredis' job; an unhandled 'error' event would crash the process instead.
  redis.on('error', () => {});
  return redis;
}

function roleOptions(role: RedisRole): RedisOptions {
  if (role === 'worker') return { maxRetriesPerRequest: null, enableOfflineQueue: true, lazyConnect: false };
  if (role === 'producer') return { maxRetriesPerRequest: 2, enableOfflineQueue: false, lazyConnect: false };
  return { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true, retryStrategy: () => null };
}

/**
 * The per-node options go to `redisOptions`; what the cluster client itself does while a master
 * fails over is set here. A command whose slot has no master yet (CLUSTERDOWN, or a closed
 * connection to the dead master) is retried every `retryDelayOn*` ms up to `maxRedirections`
 * times, then fails; BullMQ and the sync retry after that, so this only shortens the error burst.
 */
function createCluster(target: ClusterTarget, role: RedisRole, node: RedisOptions): Cluster {
  const { enableOfflineQueue, lazyConnect, retryStrategy: _perNode, ...perNode } = node;
  const options: ClusterOptions = {
    redisOptions: {
      ...perNode,
      ...(target.username === undefined ? {} : { username: target.username }),
      ...(target.password === undefined ? {} : { password: target.password }),
      ...(target.tls ? { tls: {} } : {}),
    },
    // A probe asks for the cluster's state itself and says what it is; ioredis' own ready check
    // would instead reconnect in a loop while the cluster is down, and connect() would never return.
    enableReadyCheck: role !== 'probe',
    enableOfflineQueue: enableOfflineQueue ?? true,
    lazyConnect: lazyConnect ?? false,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    maxRedirections: 16,
    slotsRefreshTimeout: 2_000,
    ...(role === 'probe' ? { clusterRetryStrategy: () => null } : {}),
  };
  return closeOrphanedNodes(new Cluster(target.nodes, options));
}

/**
 * ioredis can lose track of a node connection while a failover reshuffles its pool: a reset drops
 * a node, a new connection to the same address replaces it, and when the old one's 'end' arrives
 * late it removes the new one from the pool unclosed. Such an orphan outlives quit() and keeps a
 * stopped worker process alive. So every node connection a cluster client opened is closed with it,
 * also in the copies BullMQ makes with duplicate() for its blocking commands.
 */
function closeOrphanedNodes(cluster: Cluster): Cluster {
  const opened = new Set<Standalone>();
  cluster.on('+node', (node: Standalone) => {
    opened.add(node);
    node.once('end', () => opened.delete(node));
  });
  const close = (all: boolean) => {
    const pooled = new Set(cluster.nodes('all'));
    for (const node of opened) if (all || !pooled.has(node)) node.disconnect();
  };
  cluster.on('disconnecting', () => close(false));
  cluster.on('end', () => close(true));
  const duplicate = cluster.duplicate.bind(cluster);
  cluster.duplicate = (...args: Parameters<Cluster['duplicate']>) => closeOrphanedNodes(duplicate(...args));
  return cluster;
}

export function isCluster(redis: Redis): redis is Cluster {
  return (redis as { isCluster?: boolean }).isCluster === true;
}

export class RedisNotReadyError extends Error {
  override readonly name = 'RedisNotReadyError';
}

/**
 * One round trip that proves commands can run. On a cluster a PING is not enough (a node answers
 * PING while its cluster is down), so this asks for CLUSTER INFO and wants `cluster_state:ok`.
 */
export async function pingRedis(redis: Redis): Promise<void> {
  if (!isCluster(redis)) {
    await redis.ping();
    return;
  }
  const info = String(await redis.cluster('INFO'));
  const state = /^cluster_state:(\w+)/m.exec(info)?.[1];
  if (state !== 'ok') throw new RedisNotReadyError(`redis cluster state is ${state ?? 'unknown'}`);
}
