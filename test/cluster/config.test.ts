// REDIS_URL naming a Redis Cluster, and the queue prefix's hash tag: parsed and checked at start-up.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { hasHashTag, parseClusterUrl, redactRedisUrl, redisUrlProblem } from '../../src/redis/url.ts';

function problems(env: Record<string, string>): { variable: string; reason: string }[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('REDIS_URL for a Redis Cluster', () => {
  it('reads the seed nodes, credentials and TLS from redis+cluster:// and rediss+cluster://', () => {
    expect(parseClusterUrl('redis+cluster://10.0.0.1:7000,10.0.0.2:7001,redis-3')).toEqual({
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: 'redis-3', port: 6379 },
      ],
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(parseClusterUrl('rediss+cluster://app:p%40ss@[::1]:7000/')).toEqual({
      nodes: [{ host: '::1', port: 7000 }],
      username: 'app',
      password: 'p@ss',
      tls: true,
    });
    expect(parseClusterUrl('redis+cluster://:secret@h:7000/0').password).toBe('secret');
  });

  it('refuses what is not a node list, a database other than 0, and foreign schemes, saying which', () => {
    expect(redisUrlProblem('redis+cluster://')).toMatch(/names no nodes/);
    expect(redisUrlProblem('redis+cluster://h:7000,,h:7001')).toMatch(/"" is not a node/);
    expect(redisUrlProblem('redis+cluster://h:70000')).toMatch(/no valid port/);
    expect(redisUrlProblem('redis+cluster://h:7000/2')).toMatch(/only database 0/);
    expect(redisUrlProblem('http://h:6379')).toMatch(/must start with redis:\/\/, rediss:\/\/, redis\+cluster:\/\//);
    expect(redisUrlProblem('not a url')).toMatch(/must be a URL/);
    expect(redisUrlProblem('redis://127.0.0.1:6379/2')).toBeUndefined();
    expect(problems({ REDIS_URL: 'redis+cluster://h:7000/2' })).toEqual([{ variable: 'REDIS_URL', reason: expect.stringMatching(/only database 0/) }]);
  });

  it('masks the password in messages', () => {
    expect(redactRedisUrl('redis+cluster://app:hunter2@h1:7000,h2:7000')).toBe('redis+cluster://app:***@h1:7000,h2:7000');
    expect(redactRedisUrl('redis+cluster://h1:7000,h2:7000')).toBe('redis+cluster://h1:7000,h2:7000');
    expect(redactRedisUrl('redis://:hunter2@h:6379')).toBe('redis://:***@h:6379');
  });
});

describe('QUEUE_PREFIX on a Redis Cluster', () => {
  const cluster = { REDIS_URL: 'redis+cluster://127.0.0.1:7000,127.0.0.1:7001' };

  it('wraps the default prefix in a hash tag, so every key of a queue lands in one slot', () => {
    expect(loadConfig(cluster).queuePrefix).toBe('{classroom-sync}');
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).queuePrefix).toBe('classroom-sync');
  });

  it('keeps a prefix that has a hash tag, and refuses one without, naming the fix', () => {
    expect(loadConfig({ ...cluster, QUEUE_PREFIX: 'tenant-a{cs}' }).queuePrefix).toBe('tenant-a{cs}');
    expect(problems({ ...cluster, QUEUE_PREFIX: 'tenant-a' })).toEqual([
      { variable: 'QUEUE_PREFIX', reason: expect.stringContaining('QUEUE_PREFIX={tenant-a}') },
    ]);
    // "{}" is no hash tag: Redis then hashes the whole key.
    expect(problems({ ...cluster, QUEUE_PREFIX: '{}cs' })).toHaveLength(1);
  });

  it('knows a hash tag as Redis does: the first "{" up to the next "}", not empty', () => {
    expect(hasHashTag('{cs}')).toBe(true);
    expect(hasHashTag('a{b}c')).toBe(true);
    expect(hasHashTag('{}{b}')).toBe(false);
    expect(hasHashTag('a{b')).toBe(false);
    expect(hasHashTag('cs')).toBe(false);
  });
});
