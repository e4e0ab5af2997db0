// `classroom-sync worker` as a real process: two of them side by side with PORT=0, then SIGTERM:
// intake stops at once, active jobs finish, the process exits 0, and nothing accepted is lost.
import { describe, expect, it } from 'vitest';
import { rowsOf, untilAllSynced } from '../helpers/batches.ts';
import { type RunningCli, killAllChildren, startCli } from '../helpers/cli.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, TOKEN, call } from './http-helpers.ts';

const { h, defer } = useHarness();
defer(killAllChildren);

function startWorkerCli(flags: string[] = [], overrides: Record<string, string> = {}): RunningCli {
  return startCli(['worker', ...flags], {
    env: {
      ...h.env,
      API_TOKEN: TOKEN,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      RECONCILE_EVERY: '0',
      SYNC_CONCURRENCY: '2',
      SHUTDOWN_GRACE: '20s',
      // Each call takes 400 ms here; a stall on a loaded machine must not turn one into a timeout.
      CLASSROOM_TIMEOUT: '5s',
      SYNC_LEASE: '15s',
      ...overrides,
    },
    timeoutMs: 90_000,
  });
}

async function urlOf(cli: RunningCli): Promise<string> {
  const [line] = await cli.waitForOutput(/^\{.*"msg":"worker started".*\}$/m, 'worker started');
  return (JSON.parse(line) as { url: string }).url;
}

describe('worker process', () => {
  it('runs beside another worker on PORT=0; SIGTERM stops intake, finishes active jobs and exits 0', async () => {
    const a = startWorkerCli();
    const b = startWorkerCli();
    const [urlA, urlB] = await Promise.all([urlOf(a), urlOf(b)]);
    expect(urlA).not.toBe(urlB);
    for (const url of [urlA, urlB]) expect((await call(`${url}/readyz`)).status).toBe(200);

    // Slow remote: each call takes 400 ms, so jobs are mid-flight when the signal arrives.
    h.sandbox.faults.set({ latencyMs: 400 });
    const events = Array.from({ length: 12 }, (_, i) => ({ batchId: `sd-${i}`, name: `Shutdown ${i}`, subject: 'Maths' }));
    expect((await call(`${urlA}/v1/batches`, { method: 'POST', headers: BEARER, json: events })).status).toBe(202);
    await waitFor(async () => (await rowsOf(h)).some((r) => r.state === 'creating'), 'a job mid-flight');

    a.signal('SIGTERM');
    b.signal('SIGTERM');
    const active = new Set((await rowsOf(h)).filter((r) => r.leaseOwner !== null).map((r) => r.batchId));
    expect(active.size).toBeGreaterThan(0);
    // Intake stops: new connections are refused while the active jobs are still finishing.
    await waitFor(
      async () =>
        await fetch(`${urlA}/healthz`).then(
          () => false,
          () => true,
        ),
      'port A closed',
      5_000,
    );

    const [resultA, resultB] = await Promise.all([a.result, b.result]);
    expect(resultA.code, resultA.stderr).toBe(0);
    expect(resultB.code, resultB.stderr).toBe(0);
    expect(resultA.stdout).toMatch(/"msg":"worker stopped"/);

    // Every job that was running finished its batch; the rest wait untouched, none half-done.
    const after = await rowsOf(h);
    for (const row of after) {
      if (active.has(row.batchId)) expect(row.state, row.batchId).toBe('synced');
      else expect(['pending', 'synced'], row.batchId).toContain(row.state);
      expect(row.leaseOwner, row.batchId).toBeNull();
    }
    expect(after.some((r) => r.state === 'pending')).toBe(true);

    // A fresh worker picks up what was left: every accepted batch ends synced, with one class each.
    h.sandbox.faults.set({});
    const c = startWorkerCli(['--metrics-auth']);
    const urlC = await urlOf(c);
    expect((await call(`${urlC}/metrics`)).status).toBe(401);
    expect((await call(`${urlC}/metrics`, { headers: BEARER })).status).toBe(200);
    await untilAllSynced(h, 'all', 60_000);
    for (const e of events) expect(h.sandbox.state().byName[e.name], e.name).toBe(1);
    c.signal('SIGTERM');
    expect((await c.result).code).toBe(0);
  });

  it('past SHUTDOWN_GRACE leaves a job awaiting the remote to its lease and exits 0; another worker settles the batch with one class', async () => {
    // The add-class takes effect, then its answer never comes within the test (CLASSROOM_TIMEOUT 2 min).
    h.sandbox.faults.set({ perOperation: { addClass: { hang: 1 } } });
    // The lease at the harness's 3 s: the next worker waits for it to expire before it settles the batch.
    const slow = { SHUTDOWN_GRACE: '1s', CLASSROOM_TIMEOUT: '120s', SYNC_LEASE: '3s' };
    const a = startWorkerCli([], slow);
    const url = await urlOf(a);
    const event = { batchId: 'cut-1', name: 'Cut off 1', subject: 'Maths' };
    expect((await call(`${url}/v1/batches`, { method: 'POST', headers: BEARER, json: [event] })).status).toBe(202);
    await waitFor(() => h.sandbox.state().byName[event.name] === 1 || undefined, 'the add-class stored, its answer held');

    a.signal('SIGTERM');
    const result = await a.result;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/"msg":"active jobs did not finish in time; their leases will expire and they will run again"/);
    expect(result.stdout).toMatch(/"msg":"worker stopped"/);
    expect((await rowsOf(h)).find((r) => r.batchId === event.batchId)?.state).toBe('creating');

    h.sandbox.faults.set({});
    const b = startWorkerCli([], { SYNC_LEASE: '3s' });
    await urlOf(b);
    await untilAllSynced(h, 'all', 60_000);
    expect(h.sandbox.state().byName[event.name]).toBe(1);
    b.signal('SIGTERM');
    expect((await b.result).code).toBe(0);
  });
});
