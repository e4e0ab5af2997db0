import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/**
 * BullMQ workers need `maxRetriesPerRequest: null` (blocking commands must wait out a reconnect);
 * producers fail fast instead, because Postgres already holds every accepted batch.
 */
export function createRedis(url: string, role: 'worker' | 'producer', extra: RedisOptions = {}): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: role === 'worker' ? null : 2,
    enableOfflineQueue: role === 'worker',
    connectionName: `classroom-sync-${role}`,
    lazyConnect: false,
    ...extra,
  });
  // Reconnects are ioredis' job; an unhandled 'error' event would crash the process instead.
  redis.on('error', () => {});
  return redis;
}
