// GET /v1/batches/:batchId/events over real HTTP: a batch's audit trail, behind the API token.
import { describe, expect, it } from 'vitest';
import { rowOf, untilSynced } from '../helpers/batches.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, call, useTestWorker } from './http-helpers.ts';

const harness = useHarness();
const { h } = harness;
const worker = useTestWorker(harness);

describe('GET /v1/batches/:batchId/events', () => {
  it('serves the timeline of a batch synced through a fault, and nothing without the token', async () => {
    h.sandbox.faults.enqueue({ operation: 'getClass', fault: 'truncatedBody' });
    const posted = await call(`${worker.url}/v1/batches`, { method: 'POST', headers: BEARER, json: { batchId: 'ev-1', name: 'Events', subject: 'Art' } });
    expect(posted.status).toBe(202);
    await untilSynced(h, 'ev-1');

    const answer = await call(`${worker.url}/v1/batches/ev-1/events`, { headers: BEARER });
    expect(answer.status).toBe(200);
    expect(answer.body.batchId).toBe('ev-1');
    const events = answer.body.events as { type: string; operation?: string; outcome?: string; toState?: string; at: string }[];
    expect(events[0]).toMatchObject({ type: 'received', toState: 'pending' });
    expect(events.filter((e) => e.operation === 'getClass').map((e) => e.outcome)).toEqual(['outcome_unknown', 'ok']);
    expect(events.at(-1)).toMatchObject({ type: 'transition', toState: 'synced' });
    expect(Number.isNaN(Date.parse(events[0]!.at))).toBe(false);
    const row = await rowOf(h, 'ev-1');
    expect(answer.text).not.toContain(row!.joinLink!);

    expect((await call(`${worker.url}/v1/batches/ev-1/events`)).status).toBe(401);
    expect((await call(`${worker.url}/v1/batches/ev-1/events`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status).toBe(401);
  });

  it('answers 404 for an unknown batch and 400 for a bad institute', async () => {
    const missing = await call(`${worker.url}/v1/batches/nobody/events`, { headers: BEARER });
    expect(missing.status).toBe(404);
    expect(missing.body.message).toMatch(/batch nobody of institute .* is not known/);
    const bad = await call(`${worker.url}/v1/batches/ev-1/events?instituteId=a%2Fb`, { headers: BEARER });
    expect(bad.status).toBe(400);
    expect(bad.body.problems[0].path).toBe('instituteId');
  });
});
