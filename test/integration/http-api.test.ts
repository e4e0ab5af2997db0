// The batch API over real HTTP: auth, ingest (202/400/413/415), reads (200/404/400), pagination.
import { describe, expect, it } from 'vitest';
import { batchClasses } from '../../src/db/schema/index.ts';
import { rowOf, untilAllTerminal, untilSynced } from '../helpers/batches.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, TOKEN, basic, call, useTestWorker } from './http-helpers.ts';

const harness = useHarness();
const { h } = harness;
// Few connections: this file posts 1,000+ batches that sync in the background while other files run.
const w = useTestWorker(harness, { SYNC_CONCURRENCY: '4' });

const post = (json: unknown, headers: Record<string, string> = BEARER) => call(`${w.url}/v1/batches`, { method: 'POST', headers, json });

describe('authentication', () => {
  it('refuses /v1 without a token, with a wrong one, with Basic, and with a token of another length (401)', async () => {
    for (const headers of [
      {},
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}X` },
      basic('ops', TOKEN),
      { authorization: TOKEN },
      { authorization: 'Bearer ' },
    ]) {
      const answer = await call(`${w.url}/v1/batches`, { headers });
      expect(answer.status, JSON.stringify(headers)).toBe(401);
      expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
      expect(answer.body.error).toBe('unauthorized');
    }
    const post401 = await post({ batchId: 'nope', name: 'n', subject: 's' }, {});
    expect(post401.status).toBe(401);
    expect(await rowOf(h, 'nope')).toBeUndefined();
  });

  it('accepts the right token', async () => {
    expect((await call(`${w.url}/v1/batches`, { headers: BEARER })).status).toBe(200);
  });
});

describe('POST /v1/batches', () => {
  it('accepts one event (202 with its state) and syncs it; re-posting is harmless', async () => {
    const event = { batchId: 'api-1', name: 'API One', subject: 'Maths' };
    const first = await post(event);
    expect(first.status).toBe(202);
    expect(first.body.batches).toEqual([
      {
        batchId: 'api-1',
        instituteId: h.config.classroom.instituteId,
        type: 'batch.created',
        outcome: 'recorded',
        state: 'pending',
        duplicate: false,
        queued: true,
      },
    ]);
    await untilSynced(h, 'api-1');
    const again = await post({ ...event, name: 'Changed name is ignored' });
    expect(again.status).toBe(202);
    expect(again.body.batches[0]).toMatchObject({ batchId: 'api-1', state: 'synced', duplicate: true, queued: false });
    const row = await rowOf(h, 'api-1');
    expect(row?.className).toBe('API One');
    expect(h.sandbox.state().byName['API One']).toBe(1);
  });

  it('GET of a batch the remote rejected shows it failed with its last error', async () => {
    // Runs before the large posts, while nothing else is in flight: the one-shot fault meets this batch.
    await untilAllTerminal(h, 'all');
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
    await post({ batchId: 'api-rejected', name: 'Rejected', subject: 'Maths' });
    await waitFor(async () => (await rowOf(h, 'api-rejected'))?.state === 'failed', 'api-rejected failed');
    const answer = await call(`${w.url}/v1/batches/api-rejected`, { headers: BEARER });
    expect(answer.body).toMatchObject({ state: 'failed', classId: null, joinLink: null, lastErrorKind: 'rejected' });
    expect(answer.body.lastError).toMatch(/addClass/);
  });

  it('accepts an array and answers each batch in order', async () => {
    const events = Array.from({ length: 25 }, (_, i) => ({ batchId: `arr-${i}`, name: `Array ${i}`, subject: 'Art' }));
    const answer = await post(events);
    expect(answer.status).toBe(202);
    expect(answer.body.batches.map((b: { batchId: string }) => b.batchId)).toEqual(events.map((e) => e.batchId));
    expect(answer.body.batches.every((b: { state: string; queued: boolean }) => b.state === 'pending' && b.queued)).toBe(true);
  });

  it('rejects a mixed array with 400 naming every bad field by index, and records none of it', async () => {
    const answer = await post([
      { batchId: 'mix-ok-0', name: 'Fine', subject: 'Art' },
      { batchId: 'mix-1', name: '', subject: 'Art' },
      { batchId: 'mix-ok-2', name: 'Fine too', subject: 'Art' },
      { batchId: 'mix-3', subject: 'Art', instituteId: '../etc' },
      'not an object',
    ]);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_request');
    expect(answer.body.problems).toEqual([
      { path: '[1].name', reason: 'must not be empty' },
      { path: '[3].name', reason: 'is required' },
      { path: '[3].instituteId', reason: expect.stringContaining('must be 1-128') },
      { path: '[4]', reason: 'must be a JSON object' },
    ]);
    expect(answer.body.message).toContain('[3].name is required');
    for (const id of ['mix-ok-0', 'mix-1', 'mix-ok-2', 'mix-3']) expect(await rowOf(h, id)).toBeUndefined();
  });

  it('names fields of a single bad event without an index', async () => {
    const answer = await post({ batchId: 'single-bad', name: 'x' });
    expect(answer.status).toBe(400);
    expect(answer.body.problems).toEqual([{ path: 'subject', reason: 'is required' }]);
    const scalar = await post(42);
    expect(scalar.body.problems).toEqual([{ path: '(body)', reason: 'must be a JSON object' }]);
  });

  it('rejects empty arrays, arrays over 1,000, broken JSON, empty bodies and other content types', async () => {
    expect((await post([])).body.problems).toEqual([{ path: '(body)', reason: 'must hold at least one event' }]);
    const tooMany = await post(Array.from({ length: 1_001 }, (_, i) => ({ batchId: `many-${i}`, name: 'n', subject: 's' })));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.problems[0].reason).toMatch(/at most 1000 events \(got 1001\)/);
    expect(await rowOf(h, 'many-0')).toBeUndefined();

    const broken = await call(`${w.url}/v1/batches`, { method: 'POST', headers: { ...BEARER, 'content-type': 'application/json' }, body: '{"batchId":' });
    expect(broken.status).toBe(400);
    expect(broken.body.problems).toEqual([{ path: '(body)', reason: 'is not valid JSON' }]);
    const empty = await call(`${w.url}/v1/batches`, { method: 'POST', headers: { ...BEARER, 'content-type': 'application/json' }, body: '' });
    expect(empty.status).toBe(400);
    const text = await call(`${w.url}/v1/batches`, { method: 'POST', headers: { ...BEARER, 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(415);
  });

  it('accepts exactly 1,000 events in one post', async () => {
    const events = Array.from({ length: 1_000 }, (_, i) => ({ batchId: `k-${i}`, name: `Thousand ${i}`, subject: 'Bulk' }));
    const answer = await post(events);
    expect(answer.status).toBe(202);
    expect(answer.body.batches).toHaveLength(1_000);
  });

  it('answers 413 for a body past the limit and records nothing', async () => {
    const pad = 'x'.repeat(8_000);
    // ~11 MiB: over the 10 MiB limit however the events are counted.
    const events = Array.from({ length: 1_400 }, (_, i) => ({ batchId: `big-${i}`, name: 'n', subject: 's', note: pad }));
    const answer = await post(events);
    expect(answer.status).toBe(413);
    expect(answer.body.error).toBe('payload_too_large');
    expect(await rowOf(h, 'big-0')).toBeUndefined();
  });
});

describe('GET /v1/batches/:batchId', () => {
  it('returns the mapping with ClassID, join link, state, timestamps and last error', async () => {
    await untilSynced(h, 'api-1');
    const answer = await call(`${w.url}/v1/batches/api-1`, { headers: BEARER });
    expect(answer.status).toBe(200);
    const row = (await rowOf(h, 'api-1'))!;
    expect(answer.body).toMatchObject({
      batchId: 'api-1',
      instituteId: h.config.classroom.instituteId,
      state: 'synced',
      classId: row.classId,
      joinLink: row.joinLink,
      lastError: null,
      receivedAt: row.receivedAt.toISOString(),
      syncedAt: row.syncedAt!.toISOString(),
    });
    expect(answer.body.joinLink).toMatch(/^https?:\/\//);
    const withInstitute = await call(`${w.url}/v1/batches/api-1?instituteId=${h.config.classroom.instituteId}`, { headers: BEARER });
    expect(withInstitute.body.classId).toBe(row.classId);
  });

  it('404s for an unknown batch or another institute, 400 for a bad instituteId or parameter', async () => {
    const unknown = await call(`${w.url}/v1/batches/does-not-exist`, { headers: BEARER });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
    const elsewhere = await call(`${w.url}/v1/batches/api-1?instituteId=other-institute`, { headers: BEARER });
    expect(elsewhere.status).toBe(404);
    const known = h.config.classroom.instituteId;
    expect(elsewhere.body.message).toBe(
      `batch api-1 of institute other-institute is not known; it is known under institute ${known}: ask with ?instituteId=${known}`,
    );
    const bad = await call(`${w.url}/v1/batches/api-1?instituteId=${encodeURIComponent('a/b')}`, { headers: BEARER });
    expect(bad.status).toBe(400);
    expect(bad.body.problems).toEqual([{ path: 'instituteId', reason: expect.any(String) }]);
    const extra = await call(`${w.url}/v1/batches/api-1?verbose=1`, { headers: BEARER });
    expect(extra.body.problems).toEqual([{ path: 'verbose', reason: 'is not a known parameter' }]);
  });
});

describe('GET /v1/batches', () => {
  it('pages through every mapping exactly once with an opaque cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: { items: { batchId: string }[]; nextCursor: string | null } } = await call(
        `${w.url}/v1/batches?limit=300${cursor ? `&cursor=${cursor}` : ''}`,
        { headers: BEARER },
      );
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(300);
      seen.push(...page.body.items.map((i) => i.batchId));
      cursor = page.body.nextCursor;
      pages += 1;
    } while (cursor);
    const total = await h.runtime.database.db.$count(batchClasses);
    expect(seen).toHaveLength(total);
    expect(new Set(seen).size).toBe(total);
    expect(pages).toBe(Math.ceil(total / 300));
  });

  it('filters by state and uses a default page size', async () => {
    const failed = await call(`${w.url}/v1/batches?state=failed`, { headers: BEARER });
    expect(failed.body.items.map((i: { batchId: string }) => i.batchId)).toEqual(['api-rejected']);
    expect(failed.body.nextCursor).toBeNull();
    const defaults = await call(`${w.url}/v1/batches`, { headers: BEARER });
    expect(defaults.body.items).toHaveLength(50);
    expect(defaults.body.nextCursor).toEqual(expect.any(String));
  });

  it('answers 400 naming the bad parameter', async () => {
    const cases: [string, string][] = [
      ['state=done', 'state'],
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
      [`cursor=${Buffer.from('id:abc').toString('base64url')}`, 'cursor'],
      ['instituteId=a%20b', 'instituteId'],
      ['sort=desc', 'sort'],
    ];
    for (const [query, param] of cases) {
      const answer = await call(`${w.url}/v1/batches?${query}`, { headers: BEARER });
      expect(answer.status, query).toBe(400);
      expect(
        answer.body.problems.map((p: { path: string }) => p.path),
        query,
      ).toEqual([param]);
    }
  });
});
