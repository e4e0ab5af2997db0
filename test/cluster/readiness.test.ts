// Is a Redis Cluster usable right now? A node answers PING while its cluster is down, so `check`
// and /readyz ask for cluster_state:ok. Here a 3-master cluster without replicas loses a master:
// its slots have nobody to serve them, and both must say so.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { checkRedis } from '../../src/commands/preflight.ts';
import { type Redis, createRedis, isCluster, pingRedis } from '../../src/redis/connection.ts';
import { waitFor } from '../helpers/harness.ts';
import { RedisClusterProcesses } from './redis-cluster.ts';

const cluster = new RedisClusterProcesses({ masters: 3, replicasPerMaster: 0, nodeTimeoutMs: 1_000 });
let redis: Redis | undefined;

beforeAll(async () => {
  await cluster.start();
});

afterAll(async () => {
  redis?.disconnect();
  await cluster.stop();
});

it('check and the readiness ping say ok on a healthy cluster, and fail once a master without a replica is gone', async () => {
  expect(await checkRedis(cluster.url)).toMatchObject({ status: 'ok', detail: expect.stringContaining('cluster state ok') });
  redis = createRedis(cluster.url, 'worker');
  expect(isCluster(redis)).toBe(true);
  await pingRedis(redis);
  // Keys spread over every master's slots work through the one client.
  for (let i = 0; i < 30; i++) await redis.set(`readiness-${i}`, String(i));
  expect(await redis.get('readiness-29')).toBe('29');

  await cluster.kill(cluster.ports[0]!);
  // Once the surviving masters agree the node failed (cluster-node-timeout), the cluster is down.
  const finding = await waitFor(
    async () => {
      const f = await checkRedis(cluster.url);
      return f.status === 'fail' && f;
    },
    'check to report the cluster down',
    20_000,
  );
  expect(finding.detail).toMatch(/cluster state is fail/);
  await expect(pingRedis(redis)).rejects.toThrow(/cluster state is fail/);
}, 60_000);
