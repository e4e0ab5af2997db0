// The failed-sign-in throttle on a clock the test gives it: against real Redis (the count the fleet
// shares), and in memory while Redis is unreachable. The window's length is checked to the second
// by moving that clock, never by waiting a minute or reading the time. Then a real server over
// loopback, sent many wrong tokens at once.
import { randomBytes } from 'node:crypto';
import { type Server as NetServer, type Socket, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuthThrottle, FAILURE_WINDOW_SECONDS, MAX_FAILURES, createAuthThrottle } from '../../src/http/auth-throttle.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { REDIS_URL } from '../helpers/harness.ts';
import { startLoneServer } from './http-helpers.ts';

const redis = createRedis(REDIS_URL, 'worker');
// Never connected (lazy, and nothing listens there): a Redis that is unreachable.
const unreachable = createRedis('redis://127.0.0.1:1', 'probe');
// Until the connection is ready the throttle counts in memory: wait for it.
beforeAll(async () => {
  await redis.ping();
});
afterAll(async () => {
  await redis.quit();
  unreachable.disconnect();
});

const WINDOW_MS = FAILURE_WINDOW_SECONDS * 1000;

/** A clock at a fixed epoch time, moved by the test. */
function testClock() {
  let t = Date.parse('2026-11-25T10:00:00Z');
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

async function fail(throttle: AuthThrottle, address: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) await throttle.failed(address);
}

describe.each([
  ['in Redis', () => redis],
  ['in memory while Redis is unreachable', () => unreachable],
])('the sign-in throttle, %s', (_where, connection) => {
  const prefix = () => `cs-test-throttle-${randomBytes(4).toString('hex')}`;

  it(`lets an address try ${MAX_FAILURES} times, then refuses it until the window that opened at its first failure ends`, async () => {
    const clock = testClock();
    const throttle = createAuthThrottle(connection(), prefix(), clock);
    await fail(throttle, '10.0.0.1', MAX_FAILURES - 1);
    expect(await throttle.retryAfter('10.0.0.1')).toBeUndefined();
    clock.advance(10_000);
    await throttle.failed('10.0.0.1');
    expect(await throttle.retryAfter('10.0.0.1')).toBe(FAILURE_WINDOW_SECONDS - 10);
    // Retry-After rounds up: never "0" while refused.
    clock.advance(WINDOW_MS - 10_000 - 1_500);
    expect(await throttle.retryAfter('10.0.0.1')).toBe(2);
    clock.advance(1_499);
    expect(await throttle.retryAfter('10.0.0.1')).toBe(1);
    clock.advance(1);
    expect(await throttle.retryAfter('10.0.0.1')).toBeUndefined();
    // A new window opens with the next failure: one failure is far from the limit.
    await throttle.failed('10.0.0.1');
    expect(await throttle.retryAfter('10.0.0.1')).toBeUndefined();
  });

  it(`decides as it counts: of ${MAX_FAILURES * 10} failures at once, exactly ${MAX_FAILURES} are answered "wrong", the rest "wait"`, async () => {
    const clock = testClock();
    const throttle = createAuthThrottle(connection(), prefix(), clock);
    const decisions = await Promise.all(Array.from({ length: MAX_FAILURES * 10 }, () => throttle.failed('10.0.0.9')));
    expect(decisions.filter((d) => d === undefined)).toHaveLength(MAX_FAILURES);
    expect(new Set(decisions.filter((d) => d !== undefined))).toEqual(new Set([FAILURE_WINDOW_SECONDS]));
    clock.advance(WINDOW_MS);
    expect(await throttle.failed('10.0.0.9')).toBeUndefined();
  });

  it('counts an IPv6 address as its /64 and an IPv4-mapped one as its IPv4 address', async () => {
    const throttle = createAuthThrottle(connection(), prefix(), testClock());
    await fail(throttle, '2001:db8:1:2::1', MAX_FAILURES / 2);
    await fail(throttle, '2001:db8:1:2:ffff:ffff:ffff:ffff', MAX_FAILURES / 2);
    expect(await throttle.retryAfter('2001:db8:1:2:abcd::7')).toBe(FAILURE_WINDOW_SECONDS);
    expect(await throttle.retryAfter('2001:db8:1:3::1')).toBeUndefined();
    await fail(throttle, '::ffff:192.0.2.7', MAX_FAILURES);
    expect(await throttle.retryAfter('192.0.2.7')).toBe(FAILURE_WINDOW_SECONDS);
  });

  it('counts each address alone, and forgets failures whose window has ended', async () => {
    const clock = testClock();
    const throttle = createAuthThrottle(connection(), prefix(), clock);
    await fail(throttle, '10.0.0.2', MAX_FAILURES);
    expect(await throttle.retryAfter('10.0.0.2')).toBe(FAILURE_WINDOW_SECONDS);
    expect(await throttle.retryAfter('10.0.0.3')).toBeUndefined();
    await fail(throttle, '10.0.0.3', MAX_FAILURES - 1);
    clock.advance(WINDOW_MS);
    await throttle.failed('10.0.0.3');
    expect(await throttle.retryAfter('10.0.0.3')).toBeUndefined();
  });
});

describe('the sign-in throttle of a fleet', () => {
  it('counts an address once for every process that shares the Redis, and all of them refuse it until the same second', async () => {
    const clock = testClock();
    const prefix = `cs-test-throttle-${randomBytes(4).toString('hex')}`;
    const [one, two] = [createAuthThrottle(redis, prefix, clock), createAuthThrottle(redis, prefix, clock)];
    await fail(one, '10.0.0.4', MAX_FAILURES / 2);
    clock.advance(5_000);
    await fail(two, '10.0.0.4', MAX_FAILURES / 2);
    expect(await one.retryAfter('10.0.0.4')).toBe(FAILURE_WINDOW_SECONDS - 5);
    expect(await two.retryAfter('10.0.0.4')).toBe(FAILURE_WINDOW_SECONDS - 5);
    // A process that counted nothing itself refuses the address too; Redis drops the count with the window.
    expect(await createAuthThrottle(redis, prefix, clock).retryAfter('10.0.0.4')).toBe(FAILURE_WINDOW_SECONDS - 5);
    expect(await redis.pttl(`${prefix}:sign-in-failures:10.0.0.4`)).toBeGreaterThan(0);
  });
});

describe('a server sent many wrong tokens at once', () => {
  it.each([
    ['counting in Redis', REDIS_URL],
    ['counting in memory (Redis unreachable)', 'redis://127.0.0.1:1'],
  ])(`answers ${MAX_FAILURES} of 200 wrong Bearer tokens sent at once 401, every other 429, %s`, async (_how, redisUrl) => {
    const { url, node, close } = await startLoneServer({ REDIS_URL: redisUrl });
    try {
      const answers = await atOnce(
        url,
        node,
        Array.from({ length: 200 }, (_, i) => `GET /v1/batches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong-guess-${i}\r\nConnection: close\r\n\r\n`),
      );
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 401).length).toBe(MAX_FAILURES);
      expect(statuses.filter((status) => status === 429).length).toBe(200 - MAX_FAILURES);
      expect(answers.find((answer) => answer.status === 429)?.retryAfter).toBeGreaterThan(0);
    } finally {
      await close();
    }
  });
});

/**
 * Sends each request on a connection of its own, once the server has accepted every connection, so
 * it reads all the requests at once (fetch opens connections as it goes, and a server accepts them
 * one poll at a time: each request would be answered before the next arrived).
 */
async function atOnce(base: string, server: NetServer, requests: string[]): Promise<{ status: number; retryAfter: number | undefined }[]> {
  const { hostname, port } = new URL(base);
  const accepted = new Promise<void>((resolve) => {
    let seen = 0;
    const onConnection = () => {
      if (++seen < requests.length) return;
      server.off('connection', onConnection);
      resolve();
    };
    server.on('connection', onConnection);
  });
  const sockets = await Promise.all(
    requests.map(
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(Number(port), hostname, () => resolve(socket));
          socket.once('error', reject);
        }),
    ),
  );
  await accepted;
  const answers = sockets.map(answerOf);
  for (const [i, socket] of sockets.entries()) socket.write(requests[i] ?? '');
  return Promise.all(answers);
}

/** The status and Retry-After of the one answer a connection gets before the server closes it. */
function answerOf(socket: Socket): Promise<{ status: number; retryAfter: number | undefined }> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.once('error', reject);
    socket.once('end', () => {
      const retryAfter = /\r\nretry-after: (\d+)\r\n/i.exec(text)?.[1];
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]), retryAfter: retryAfter === undefined ? undefined : Number(retryAfter) });
    });
  });
}
