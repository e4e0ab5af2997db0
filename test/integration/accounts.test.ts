// Several accounts on one deployment: each institute's batches reach the remote with its own
// account's credentials, at its own account's rate limit; one account's refused key stops only that
// account; reconciliation reads every account's institutes; intake refuses an institute no account serves.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { runReconciliation } from '../../src/reconcile/run.ts';
import { reconcileOptionsOf } from '../../src/reconcile/settings.ts';
import { reconcileDepsOf } from '../../src/reconcile/setup.ts';
import { type TestAccount, accountEntry, instituteOf, writeAccountsFile } from '../helpers/accounts.ts';
import { rowsOf, untilAllSynced } from '../helpers/batches.ts';
import { killAllChildren, runCli, scratchDir } from '../helpers/cli.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { BEARER, call, startTestWorker } from './http-helpers.ts';

const each = useHarnessPerTest();

async function harnessWith(accounts: TestAccount[], env: Record<string, string> = {}): Promise<Harness> {
  const file = writeAccountsFile(accounts);
  each.defer(() => file.remove());
  return each.harness({ env: { CLASSROOM_ACCOUNTS_FILE: file.path, ...env } });
}

const batchesOf = (name: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ batchId: `${name}-${i}`, name: `${name} class ${i}`, subject: 'Maths', instituteId: instituteOf(name) }));

const reconcile = (h: Harness) => runReconciliation(reconcileDepsOf(h.runtime), { trigger: 'test', ...reconcileOptionsOf(h.config), linkChecks: 0 });

describe('accounts', () => {
  it('every batch is created with its own institute credentials; no key ever exceeds its limit, and each runs at it', async () => {
    // The remote enforces each key's limit exactly over a sliding window: 30 s admitting half of the
    // per-minute limit. That is stricter than the live remote (never over R/2 in any 30 s means never
    // over R in any 60 s) and short enough to run each key at its limit for about 33 s: the peak is
    // the busiest window, so a window at the pace shows it, and the rest is for a slow start. The
    // client schedules 98% of R, so a call may reach the remote up to 2% of the window after its
    // slot: told the window (CLASSROOM_RATE_WINDOW), it takes a fresh slot for an add-class whose
    // `creating` write outlasted 612 ms. Told nothing, it assumed a minute's 1.2 s, and a CI machine
    // running two test files side by side drew a 429 from it now and then. A shorter window leaves
    // less of that headroom (12 s, 240 ms of it, drew a 429 on a loaded machine), and a stalled worker
    // loses a larger share of it (at 20 s and 24 s, a loaded machine's worker fell under 0.8 of the pace).
    const WINDOW_MS = 30_000;
    const accounts = [
      { name: 'north', ratePerMinute: 300, batches: 54 },
      { name: 'south', ratePerMinute: 600, batches: 108 },
      { name: 'east', ratePerMinute: 1200, batches: 216 },
    ];
    const perWindow = (a: { ratePerMinute: number }) => (a.ratePerMinute * WINDOW_MS) / 60_000;
    // CLASSROOM_TIMEOUT at its production default, not the harness's 1 s: this test counts calls
    // exactly, and on a loaded CI machine an event-loop stall of a second made a call time out
    // now and then (an edit-class sent again, an add-class settled by a listing: correct, and one
    // call more than the count). Timeouts have tests of their own.
    const h = await harnessWith(accounts, { CLASSROOM_RATE_LIMIT_PER_MINUTE: '60000', CLASSROOM_RATE_WINDOW: `${WINDOW_MS}ms`, CLASSROOM_TIMEOUT: '10s' });
    h.sandbox.faults.set({
      latencyMs: 5,
      rateLimitWindowMs: WINDOW_MS,
      rateLimitPerAccount: Object.fromEntries(accounts.map((a) => [a.name, perWindow(a)])),
    });
    each.syncWorker(h.runtime);
    await publishBatches(
      publishDepsOf(h),
      accounts.flatMap((a) => batchesOf(a.name, a.batches)),
    );
    const total = accounts.reduce((n, a) => n + a.batches, 0);
    await untilAllSynced(h, { count: total }, 100_000);

    const state = h.sandbox.state();
    for (const account of accounts) {
      const { name } = account;
      // Every call of an account's batches went out with its key (the remote refuses another
      // institute's key), and none was refused for the rate: no 429.
      // Per operation, so that an extra call says which step made it.
      const perStep = { calls: account.batches, outcomes: { ok: account.batches } };
      expect(state.calls.byAccountOperation[name], name).toEqual({ addClass: perStep, editClass: perStep, getClass: perStep });
      expect(state.calls.byAccount[name], name).toEqual({ calls: 3 * account.batches, outcomes: { ok: 3 * account.batches } });
      // The remote's own count: never over the limit in any window, and over 0.6 of it in one. The
      // pace is 0.98; a loaded 2-core machine's worker was measured at 0.67 of it (a throughput,
      // which this test cannot promise). What the floor catches is a key held to another's limit:
      // every key at the slowest key's pace would be 0.5 of south's and 0.25 of east's.
      const peak = state.accounts[name]?.peakCallsPerWindow ?? 0;
      expect(peak, `${name}: peak calls in any ${WINDOW_MS} ms`).toBeLessThanOrEqual(perWindow(account));
      expect(peak, `${name}: peak calls in any ${WINDOW_MS} ms`).toBeGreaterThan(0.6 * perWindow(account));
    }
    for (const truth of state.classes ?? []) expect(truth.sentName.startsWith(truth.instituteId.replace('inst-', ''))).toBe(true);
    expect(state.classCount).toBe(total);
  }, 150_000);

  it("one account's refused key leaves the others syncing; its batches wait unchanged, then resume by themselves", async () => {
    const h = await harnessWith([{ name: 'north' }, { name: 'south' }, { name: 'east' }], { CLASSROOM_KEY_PROBE_EVERY: '400ms', SYNC_CONCURRENCY: '4' });
    each.defer(killAllChildren);
    h.sandbox.faults.set({ latencyMs: 10, refuseKey: { status: 401, accounts: ['south'] } });
    const worker = await startTestWorker(h);
    each.defer(() => worker.stop());
    await publishBatches(
      publishDepsOf(h),
      ['north', 'south', 'east'].flatMap((name) => batchesOf(name, 10)),
    );

    const others = [...batchesOf('north', 10), ...batchesOf('east', 10)].map((b) => b.batchId);
    await untilAllSynced(h, others, 30_000);
    const south = (await rowsOf(h)).filter((r) => r.instituteId === instituteOf('south'));
    expect(south).toHaveLength(10);
    for (const row of south) expect(row).toMatchObject({ state: 'pending', lastError: null, classId: null });
    expect(h.sandbox.state().accounts.south?.keyRefused).toBe(true);

    // What an operator sees: the account's gauge, readiness, and a pass that reads the others.
    const metrics = (await call(`${worker.url}/metrics`)).text;
    expect(metrics).toMatch(/^classroom_sync_credentials_refused\{account="south"\} 1$/m);
    expect(metrics).toMatch(/^classroom_sync_credentials_refused\{account="north"\} 0$/m);
    expect(metrics).toMatch(/^classroom_sync_account_batches\{account="south",state="pending"\} 10$/m);
    expect(metrics).toMatch(/^classroom_sync_account_batches\{account="north",state="synced"\} 10$/m);
    expect(metrics).toMatch(/^classroom_sync_account_rate_limit_per_minute\{account="east"\} 600000$/m);
    const [status, statusJson] = await Promise.all([runCli(['status'], { env: h.env }), runCli(['status', '--json'], { env: h.env })]);
    expect(status.stdout).toMatch(/^ {2}account north: 10 synced \(institute inst-north\)$/m);
    expect(status.stdout).toMatch(/^ {2}account south: 10 pending \(institute inst-south\)$/m);
    expect(status.stdout).toMatch(/^account south: credentials refused since \S+ \(HTTP 401: [^)]*\): its batches wait, unchanged/m);
    expect(JSON.parse(statusJson.stdout).accounts.south).toMatchObject({
      institutes: ['inst-south'],
      batches: { pending: 10, synced: 0 },
    });
    const ready = await call(`${worker.url}/readyz`);
    expect(ready.body).toMatchObject({ status: 'degraded', checks: { credentials: expect.stringMatching(/^account south: credentials refused since /) } });
    const during = await reconcile(h);
    expect(during.counts.in_sync).toBe(20);
    const unread = during.institutes.filter((i) => i.error);
    expect(unread.map((i) => i.instituteId)).toEqual([instituteOf('south')]);
    expect(unread[0]?.error).toMatch(/not read: the API key of account south is refused/);

    h.sandbox.faults.set({ latencyMs: 10 });
    const all = await untilAllSynced(h, { count: 30 }, 30_000);
    expect(all.map((r) => r.attempts).filter((a) => a !== 1)).toEqual([]);
    expect(Object.values(h.sandbox.state().bySentName).every((n) => n === 1)).toBe(true);
    const after = await reconcile(h);
    expect(after.ok).toBe(true);
    expect(after.counts.in_sync).toBe(30);
    expect(after.institutes.map((i) => i.instituteId).sort()).toEqual(['inst-east', 'inst-north', 'inst-south']);
  }, 90_000);

  it('refuses at intake an institute no account serves (library, HTTP, CLI); an event without one goes to the default account', async () => {
    const h = await harnessWith([{ name: 'north' }, { name: 'south' }]);
    each.defer(killAllChildren);
    const [unserved, none] = await publishBatches(publishDepsOf(h), [
      { batchId: 'lost-1', name: 'Nobody', subject: 'Art', instituteId: 'inst-nobody' },
      { batchId: 'default-1', name: 'Default one', subject: 'Art' },
    ]);
    expect(unserved).toMatchObject({ ok: false, problems: [{ field: 'instituteId', reason: expect.stringMatching(/^is not served by any account/) }] });
    expect(none).toMatchObject({ ok: true, instituteId: instituteOf('north') });

    const worker = await startTestWorker(h);
    each.defer(() => worker.stop());
    const posted = await call(`${worker.url}/v1/batches`, {
      method: 'POST',
      headers: BEARER,
      json: [{ batchId: 'lost-2', name: 'Nobody', subject: 'Art', instituteId: 'inst-nobody' }],
    });
    expect(posted.status).toBe(400);
    expect(JSON.stringify(posted.body)).toMatch(/\[0\]\.instituteId is not served by any account/);

    const file = join(scratchDir(), 'events.ndjson');
    writeFileSync(file, `${JSON.stringify({ batchId: 'lost-3', name: 'Nobody', subject: 'Art', instituteId: 'inst-nobody' })}\n`);
    const cli = await runCli(['enqueue', file], { env: h.env });
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/^line 1: instituteId is not served by any account/m);

    await untilAllSynced(h, ['default-1']);
    expect((await rowsOf(h)).map((r) => r.batchId)).toEqual(['default-1']);
    expect(h.sandbox.state().calls.byAccount.north?.calls).toBe(3);
    await waitFor(async () => (await call(`${worker.url}/readyz`)).body.status === 'ready', 'readiness');
  }, 60_000);

  it('check reads with every account and says, one line each, which one the remote refuses and which field to fix', async () => {
    const h = await harnessWith([{ name: 'north' }, { name: 'south' }, { name: 'east' }]);
    each.defer(killAllChildren);
    // The same accounts, but east's API key is not the one the remote issued.
    const wrongKey = 'WrongKey0123456789abcdefABCDEFgh';
    const entries = ['north', 'south', 'east'].map((name) => ({ ...accountEntry({ name }), ...(name === 'east' ? { apiKey: wrongKey } : {}) }));
    const file = join(scratchDir(), 'accounts.json');
    writeFileSync(file, JSON.stringify({ accounts: entries }));

    const [ok, bad] = await Promise.all([runCli(['check'], { env: h.env }), runCli(['check'], { env: { ...h.env, CLASSROOM_ACCOUNTS_FILE: file } })]);
    expect(ok.stdout).toMatch(/^note {2}accounts\s+3 \(north, south, east\) from /m);
    for (const name of ['north', 'south', 'east'])
      expect(ok.stdout).toMatch(new RegExp(`^ok    account ${name}\\s+http://127\\.0\\.0\\.1:\\d+ accepted the credentials`, 'm'));
    expect(ok.code).toBe(0);

    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^ok {4}account north /m);
    expect(bad.stdout).toMatch(/^FAIL {2}account east\s+.*invalid credentials/m);
    expect(bad.stdout).toContain(`→ In ${file}, account "east": The service refused the Basic credentials: check userId and apiKey`);
    expect(bad.stdout + bad.stderr).not.toContain(wrongKey);
  }, 60_000);

  it("a busy account's backlog does not hold up a quiet account's live batches", async () => {
    // busy: a call every 3 s and 40 batches waiting; quiet: 10 calls a second.
    const h = await harnessWith(
      [
        { name: 'busy', ratePerMinute: 20 },
        { name: 'quiet', ratePerMinute: 600 },
      ],
      { SYNC_CONCURRENCY: '8' },
    );
    each.syncWorker(h.runtime);
    await publishBatches(publishDepsOf(h), batchesOf('busy', 40));
    // Busy's jobs are taking the worker slots: its first add-class is under way.
    await waitFor(async () => (await rowsOf(h)).some((r) => r.batchId.startsWith('busy-') && r.state !== 'pending'), "busy's first run");
    const quiet = batchesOf('quiet', 3);
    await publishBatches(publishDepsOf(h), quiet);
    await untilAllSynced(
      h,
      quiet.map((e) => e.batchId),
      30_000,
    );
    // Busy's first batch needs three of its slots, after the slots it promised its next jobs: it
    // cannot be synced before its third interval. Holding worker slots while waiting for their own
    // slots (up to 30 s each), busy's jobs would keep quiet's waiting past that; they do not.
    const rows = await rowsOf(h);
    const syncedAt = (prefix: string) => rows.filter((r) => r.batchId.startsWith(prefix) && r.syncedAt).map((r) => r.syncedAt!.getTime());
    const firstBusy = Math.min(...syncedAt('busy-'));
    expect(syncedAt('quiet-').every((at) => at < firstBusy)).toBe(true);
    // Waiting for a slot is not a failed attempt, however often busy's jobs go back to wait.
    expect(Math.max(...rows.map((r) => r.attempts))).toBeLessThanOrEqual(1);
  }, 60_000);
});
