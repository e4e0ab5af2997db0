// `npm start -- --once` as a user runs it: a child process against real PostgreSQL and Redis, with
// its own database and queue prefix. Checks what it prints and what it left in the database.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { FAST_SYNC, PG_SERVER, REDIS_URL, dropDatabase, dropQueueKeys, waitFor } from '../helpers/harness.ts';
import { killAllChildren, runCli, startCli } from '../helpers/cli.ts';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  killAllChildren();
  for (const cleanup of cleanups) await cleanup();
});

/** Env for one demo run. The demo itself appends `_demo` / `-demo` to keep apart from real batches. */
function demoEnv(extra: Record<string, string> = {}) {
  const id = randomBytes(4).toString('hex');
  const database = `classroom_sync_test_${id}`;
  const prefix = `cs-test-${id}`;
  cleanups.push(async () => {
    await dropDatabase(`${database}_demo`);
    await dropQueueKeys(`${prefix}-demo`);
  });
  const env = { DATABASE_URL: `${PG_SERVER}/${database}`, REDIS_URL, QUEUE_PREFIX: prefix, PORT: '0', ...FAST_SYNC, ...extra };
  return { env, demoDatabase: `${database}_demo` };
}

async function demoRows(database: string) {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/${database}` });
  await client.connect();
  try {
    const { rows } = await client.query<{ batch_id: string; state: string; class_id: string | null; join_link: string | null; attempts: number }>(
      'select batch_id, state, class_id, join_link, attempts from batch_classes order by batch_id',
    );
    return rows;
  } finally {
    await client.end();
  }
}

// Each test runs demos on a database and queue prefix of their own (demoEnv), and much of a demo's
// time is waiting (for PostgreSQL, for its worker to stop): the tests run side by side.
describe.concurrent('npm start -- --once', () => {
  it('migrates a fresh database, syncs every sample batch, prints an aligned table with masked links, and exits 0', async () => {
    // No faults, so no retries, even if a cold process on a loaded machine is slow to answer.
    const { env, demoDatabase } = demoEnv({ CLASSROOM_TIMEOUT: '5s', SYNC_LEASE: '15s' });
    const result = await runCli(['start', '--', '--once', '--count', '8'], { npm: true, env });
    expect(result.code, result.stderr).toBe(0);

    const rows = await demoRows(demoDatabase);
    expect(rows).toHaveLength(8);
    expect(rows.every((r) => r.state === 'synced' && /^[0-9a-f]{24}$/.test(r.class_id ?? '') && r.join_link)).toBe(true);

    const out = result.stdout;
    // Not a terminal here: plain progress lines instead of a redrawn bar, ending with every batch synced.
    expect(out).toMatch(/^synced 8\/8 batches · retries 0 · failed 0 \(/m);
    const table = out.split('\n');
    const header = table.findIndex((l) => /^batch\s+state\s+tries\s+ClassID\s+join link \(masked\)$/.test(l));
    expect(header).toBeGreaterThanOrEqual(0);
    const body = table.slice(header + 2, header + 10);
    for (const row of rows) {
      const line = body.find((l) => l.startsWith(`${row.batch_id} `));
      expect(line, `table row for ${row.batch_id}`).toMatch(
        new RegExp(`^${row.batch_id}\\s+synced\\s+1\\s+${row.class_id}\\s+http://127\\.0\\.0\\.1:\\d+/…\\(\\d+ chars\\)$`),
      );
      // The join link is a secret: neither it nor its token may appear anywhere in the output.
      expect(out + result.stderr).not.toContain(row.join_link!);
      expect(out + result.stderr).not.toContain(row.join_link!.split('/').pop()!);
    }
    // Aligned: every column starts at the same offset on every row.
    const starts = (l: string) => [...l.matchAll(/\s{2,}(\S)/g)].map((m) => m.index! + m[0].length - 1);
    for (const line of body) expect(starts(line)).toEqual(starts(table[header]!));
    expect(out).toContain('8/8 batches synced');
    expect(out).toContain('remote classes for these batches: 8; no batch got a second class');
    // The servers stop with --once: no URLs or token for them, but a line that says how to keep them.
    expect(out).not.toMatch(/^(dashboard|batch API|metrics): /m);
    expect(out).not.toMatch(/API token/);
    expect(out).toMatch(/^The dashboard, batch API and metrics stopped with this run; `npm start` without --once keeps them up\.$/m);
  });

  it('a second run reports only its own batches, and the demo database keeps only them', async () => {
    const { env, demoDatabase } = demoEnv();
    const first = await runCli(['demo', '--once', '--count', '3'], { env });
    expect(first.code, first.stderr).toBe(0);
    const second = await runCli(['demo', '--once', '--count', '2'], { env });
    expect(second.code, second.stderr).toBe(0);

    const ids = (out: string) => [...out.matchAll(/^(demo-\S+)\s+synced\s/gm)].map((m) => m[1]!);
    const [firstIds, secondIds] = [ids(first.stdout), ids(second.stdout)];
    expect(firstIds).toHaveLength(3);
    expect(secondIds).toHaveLength(2);
    expect(secondIds.some((id) => firstIds.includes(id))).toBe(false);
    expect(second.stdout).toContain('2/2 batches synced');
    expect(second.stdout).toContain('remote classes for these batches: 2; no batch got a second class');
    expect((await demoRows(demoDatabase)).map((r) => r.batch_id)).toEqual(secondIds);
  });

  it('without --once keeps serving the API and dashboard (with the printed token) until Ctrl-C, then exits 0', async () => {
    const { env, demoDatabase } = demoEnv();
    const demo = startCli(['demo', '--count', '3'], { env });
    await demo.waitForOutput(/^serving until Ctrl-C[\s\S]*npx classroom-sync enqueue FILE\.ndjson$/m, 'the demo to serve');
    const [, base] = await demo.waitForOutput(/^dashboard: {2}(http:\/\/127\.0\.0\.1:\d+)\/admin\/queues/m, 'the dashboard URL');
    const [, token] = await demo.waitForOutput(/^API token for this session: (\S+)/m, 'the session token');
    expect(demo.stdout()).toContain(`Authorization: Bearer ${token}`);

    const basic = `Basic ${Buffer.from(`operator:${token}`).toString('base64')}`;
    expect((await fetch(`${base}/admin/queues`, { headers: { authorization: basic } })).status).toBe(200);
    expect((await fetch(`${base}/admin/queues`)).status).toBe(401);
    const bearer = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const posted = await fetch(`${base}/v1/batches`, {
      method: 'POST',
      headers: bearer,
      body: JSON.stringify({ batchId: 'B-1001', name: 'Algebra I', subject: 'Maths' }),
    });
    expect(posted.status).toBe(202);
    const synced = await waitFor(async () => {
      const view = (await (await fetch(`${base}/v1/batches/B-1001`, { headers: bearer })).json()) as { state: string; classId: string | null };
      return view.state === 'synced' ? view : undefined;
    }, 'B-1001 synced by the serving demo');
    expect(synced.classId).toMatch(/^[0-9a-f]{24}$/);

    // A second demo on the same database would clear it under this one: it refuses instead.
    const second = await runCli(['demo', '--once', '--count', '1'], { env });
    expect(second.code).toBe(1);
    expect(second.stdout).toMatch(/^another demo is running on database \S+_demo and queue prefix \S+-demo: stop it \(Ctrl-C\) first/m);

    demo.signal('SIGINT');
    const result = await demo.result;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('stopping: finishing active jobs');
    expect((await demoRows(demoDatabase)).map((r) => r.state)).toEqual(['synced', 'synced', 'synced', 'synced']);
  });

  it('counts retries under injected faults, and the count matches the attempts recorded', async () => {
    const { env, demoDatabase } = demoEnv();
    const result = await runCli(['demo', '--once', '--count', '10', '--fail-rate', '0.3'], { env, timeoutMs: 55_000 });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const rows = await demoRows(demoDatabase);
    expect(rows.every((r) => r.state === 'synced')).toBe(true);
    const retries = rows.reduce((n, r) => n + r.attempts - 1, 0);
    expect(retries).toBeGreaterThan(0);
    expect(result.stdout).toMatch(new RegExp(`^synced 10/10 batches · retries ${retries} · failed 0 \\(`, 'm'));
    expect(result.stdout).toMatch(new RegExp(`10/10 batches synced in [\\d.]+ s; ${retries} retries; \\d+ remote calls \\(\\d+ with injected faults\\)`));
    expect(result.stdout).toContain('no batch got a second class');
  });

  it('says exactly what to do, and exits 1, when PostgreSQL and Redis cannot be reached', async () => {
    const result = await runCli(['demo', '--once'], {
      env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/classroom_sync', REDIS_URL: 'redis://127.0.0.1:1' },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/FAIL\s+PostgreSQL\s+cannot reach postgres:\/\/postgres@127\.0\.0\.1:1\/classroom_sync_demo \(ECONNREFUSED\)/);
    expect(result.stdout).toMatch(/FAIL\s+Redis\s+cannot reach redis:\/\/127\.0\.0\.1:1/);
    expect(result.stdout).toContain('Start them with `docker compose up -d postgres redis`, or set DATABASE_URL / REDIS_URL');
    expect(result.stdout).not.toMatch(/sandbox .* on http/);
  });
});
