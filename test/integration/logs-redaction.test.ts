// Captures every log line of a full run at trace level (HTTP requests with tokens, syncs through
// faults, wrong remote credentials, an unreachable remote, raw HTTP-client errors) and checks that no
// credential and no full join link is in any of it, and that transitions carry batchId/jobId/classId.
import { type AddressInfo, createServer } from 'node:net';
import ky from 'ky';
import { describe, expect, it } from 'vitest';
import type { WorkerProcess } from '../../src/commands/worker.ts';
import { TERMINAL_STATES } from '../../src/db/schema/index.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { rowsOf } from '../helpers/batches.ts';
import { dropQueueKeys, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, TOKEN, basic, call, startTestWorker } from './http-helpers.ts';

const WRONG_KEY = 'WrongKeyWrongKeyWrongKey01234567';
const WRONG_X_KEY = 'wrong-x-api-key-value-7f3a';
const WRONG_BEARER = 'not-the-token-but-long-enough-1234';

const { h, defer } = useHarness();
const chunks: string[] = [];
const logger = createLogger({ level: 'trace', destination: { write: (line: string) => void chunks.push(line) } });

/** A worker process on the harness, stopped at teardown (and its own queue prefix's keys dropped). */
async function worker(extra: Record<string, string> = {}): Promise<WorkerProcess> {
  const prefix = extra.QUEUE_PREFIX;
  if (prefix) defer(() => dropQueueKeys(prefix));
  const w = await startTestWorker(h, extra, { logger });
  defer(() => w.stop());
  return w;
}

/** A port nothing listens on (fetch refuses some low ports outright, which is not what we want). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const post = (url: string, json: unknown, headers: Record<string, string> = BEARER) => call(`${url}/v1/batches`, { method: 'POST', headers, json });

describe('logs', () => {
  it('hold no credential and no full join link after a run with faults, failures and authenticated requests', { timeout: 120_000 }, async () => {
    const good = await worker();
    // Faults that make the machine log errors, retries, a 429 pause and an outcome-unknown resolution.
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'error5xx' });
    h.sandbox.faults.enqueue({ operation: 'getClass', fault: 'throttle' });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
    const events = Array.from({ length: 8 }, (_, i) => ({ batchId: `log-${i}`, name: `Logged ${i}`, subject: 'Maths' }));
    expect((await post(good.url, events)).status).toBe(202);

    // Wrong remote credentials: the remote answers 401, the worker's breaker opens and the batch waits.
    const wrong = await worker({
      CLASSROOM_API_KEY: WRONG_KEY,
      CLASSROOM_X_API_KEY: WRONG_X_KEY,
      QUEUE_PREFIX: `${h.config.queuePrefix}-wrong`,
      SYNC_CONCURRENCY: '2',
    });
    expect((await post(wrong.url, { batchId: 'log-wrong-creds', name: 'Wrong creds', subject: 'Maths' })).status).toBe(202);
    // An unreachable remote: connection refused, surfaced through the HTTP client's own error as `cause`.
    const down = await worker({
      CLASSROOM_BASE_URL: `http://127.0.0.1:${await closedPort()}`,
      SYNC_ATTEMPTS: '2',
      QUEUE_PREFIX: `${h.config.queuePrefix}-down`,
      SYNC_CONCURRENCY: '2',
    });
    expect((await post(down.url, { batchId: 'log-unreachable', name: 'Unreachable', subject: 'Maths' })).status).toBe(202);

    // Requests carrying credentials, right and wrong, to every kind of route.
    await call(`${good.url}/v1/batches/log-0`, { headers: BEARER });
    await call(`${good.url}/v1/batches?limit=5`, { headers: BEARER });
    await call(`${good.url}/v1/batches`, { headers: { authorization: `Bearer ${WRONG_BEARER}` } });
    await call(`${good.url}/admin/queues`, { headers: basic('ops', TOKEN) });
    await call(`${good.url}/admin/queues/api/queues`, { headers: basic('ops', WRONG_BEARER) });
    await post(good.url, [{ batchId: 'log-bad', name: '' }]);

    await waitFor(
      async () => {
        const all = await rowsOf(h);
        const others = all.filter((r) => r.batchId !== 'log-wrong-creds' && r.batchId !== 'log-unreachable');
        const unreachable = all.find((r) => r.batchId === 'log-unreachable');
        return (
          all.length === 10 &&
          others.every((r) => TERMINAL_STATES.includes(r.state)) &&
          (await wrong.runtime.remotes.default.breaker.state()) !== undefined &&
          (unreachable?.attempts ?? 0) >= 2 &&
          chunks.some((c) => c.includes('attempts used up by an outage'))
        );
      },
      'every logged batch finished',
      60_000,
    ).catch(async (error) => {
      console.log(JSON.stringify((await rowsOf(h)).map((r) => [r.batchId, r.state, r.lastError])));
      throw error;
    });
    // After the last batch finished, so its links exist: fetch mappings with links through the API too.
    await call(`${good.url}/v1/batches?limit=20`, { headers: BEARER });

    // Raw errors from the HTTP client, whose request carries the real credentials in its headers.
    const c = h.config.classroom;
    const basicCredential = Buffer.from(`${c.userId}:${c.apiKey}`).toString('base64');
    const kyError = await ky
      .get(`${h.sandbox.url}/no-such-route`, { headers: { authorization: `Basic ${basicCredential}`, 'x-api-key': c.xApiKey }, retry: 0 })
      .catch((error: unknown) => error);
    expect(kyError).toBeInstanceOf(Error);
    logger.error({ err: kyError }, 'raw client error');
    logger.warn({ error: kyError, headers: { authorization: `Basic ${basicCredential}`, 'x-api-key': c.xApiKey } }, 'raw client error with headers');

    // The waiting batches come back every few hundred ms, passing through `creating` while they try:
    // stopping their workers (which finishes an attempt under way) leaves each at rest to be read.
    await Promise.all([wrong.stop(), down.stop()]);
    const all = await rowsOf(h);
    const synced = all.filter((r) => r.state === 'synced');
    expect(synced.length).toBe(7);
    // A refused key writes nothing off: the batch waits for the key to work.
    expect(all.find((r) => r.batchId === 'log-wrong-creds')).toMatchObject({ state: 'pending', lastError: null, classId: null });
    // Neither does an unreachable remote: its attempts used, the batch waits for it, its error kept.
    expect(all.find((r) => r.batchId === 'log-unreachable')).toMatchObject({ state: 'pending', attempts: 2, lastErrorKind: 'not_sent' });

    const text = chunks.join('');
    const lines = chunks
      .flatMap((chunk) => chunk.split('\n'))
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, any>);
    // The capture really saw the run: requests, failures from the client, and both kinds of remote error.
    expect(lines.length).toBeGreaterThan(50);
    expect(lines.some((l) => l.msg === 'incoming request' && l.req?.url === '/v1/batches/log-0')).toBe(true);
    expect(lines.some((l) => l.breaker === 'open' && l.level === 50 && /HTTP 401/.test(l.msg))).toBe(true);
    expect(lines.some((l) => l.err?.type === 'NotSentError')).toBe(true);
    expect(lines.some((l) => l.msg === 'raw client error' && l.err?.type === 'HTTPError')).toBe(true);
    // A line names its batch once: a job's logger and its run's are not both bound to it.
    const batchLines = chunks.flatMap((chunk) => chunk.split('\n')).filter((line) => line.includes('"batchId"'));
    expect(batchLines.length).toBeGreaterThan(10);
    expect(batchLines.filter((line) => line.split('"batchId"').length > 2)).toEqual([]);

    const secrets: Record<string, string> = {
      'API token': TOKEN,
      'wrong bearer token': WRONG_BEARER,
      'API key': c.apiKey,
      'x-api-key': c.xApiKey,
      'Basic credential': basicCredential,
      'dashboard Basic credential': Buffer.from(`ops:${TOKEN}`).toString('base64'),
      'wrong API key': WRONG_KEY,
      'wrong x-api-key': WRONG_X_KEY,
      'wrong Basic credential': Buffer.from(`${c.userId}:${WRONG_KEY}`).toString('base64'),
    };
    for (const [what, secret] of Object.entries(secrets)) expect(text.includes(secret), `${what} is in the logs`).toBe(false);
    for (const row of synced) {
      expect(row.joinLink!.length).toBeGreaterThan(20);
      expect(text.includes(row.joinLink!), `join link of ${row.batchId} is in the logs`).toBe(false);
      // The token part of the link alone must not leak either (e.g. a URL-encoded or re-rendered link).
      const tail = row.joinLink!.slice(-16);
      expect(text.includes(tail), `join token of ${row.batchId} is in the logs`).toBe(false);
    }
  });

  it('logs one line per state transition with batchId, jobId and classId', async () => {
    const lines = chunks
      .flatMap((chunk) => chunk.split('\n'))
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, any>);
    const transitions = lines.filter((l) => typeof l.from === 'string' && typeof l.to === 'string');
    expect(transitions.length).toBeGreaterThan(7 * 4);
    for (const line of transitions) {
      expect(line, JSON.stringify(line)).toHaveProperty('batchId');
      expect(line, JSON.stringify(line)).toHaveProperty('jobId');
      expect(line, JSON.stringify(line)).toHaveProperty('classId');
    }
    const all = await rowsOf(h);
    for (const row of all.filter((r) => r.state === 'synced')) {
      const toSynced = transitions.filter((l) => l.batchId === row.batchId && l.to === 'synced');
      expect(toSynced).toHaveLength(1);
      expect(toSynced[0]).toMatchObject({ classId: row.classId, from: 'link_enabled' });
      expect(toSynced[0]!.jobId).toMatch(/^batch-/);
    }
    // The refused key failed no batch, and opened the breaker once (one line, not one per batch).
    expect(transitions.filter((l) => l.batchId === 'log-wrong-creds' && l.to === 'failed')).toEqual([]);
    expect(lines.filter((l) => l.breaker === 'open')).toHaveLength(1);
  });
});
