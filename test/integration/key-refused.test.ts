// A refused key stops the fleet, not the batches: while the remote answers 401 (or a 403 about the
// key) to every call, no batch changes state or uses an attempt; workers probe and resume by
// themselves. Also what an operator sees meanwhile: the metric (and the alert rule on it), /readyz,
// and the line `classroom-sync status` prints. Mid-run refusals are tried at several settings: 401
// and 403 for a few seconds, and a 401 that outlasts several probe intervals.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { refusedKeyLine } from '../../src/read-model/index.ts';
import type { WorkerProcess } from '../../src/commands/worker.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import type { BreakerState } from '../../src/ratelimit/breaker.ts';
import { writeAccountsFile } from '../helpers/accounts.ts';
import { rowsOf, untilAllSynced } from '../helpers/batches.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { promtool } from '../helpers/promql.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { call, startTestWorker } from './http-helpers.ts';

const ALERTS = fileURLToPath(new URL('../../deploy/alerts.yml', import.meta.url));

const each = useHarnessPerTest();

async function start(n: number, logs: string[], probeEveryMs: number): Promise<{ harness: Harness; w: WorkerProcess }> {
  // CLASSROOM_TIMEOUT well above the sandbox's 25 ms: on a loaded machine the harness's 1 s could time
  // out a call, which rightly uses an attempt, and this test counts the attempts a refusal uses.
  const env = { SYNC_CONCURRENCY: '4', CLASSROOM_KEY_PROBE_EVERY: `${probeEveryMs}ms`, CLASSROOM_TIMEOUT: '5s' };
  const harness = await each.harness({ env });
  harness.sandbox.faults.set({ latencyMs: 25 });
  const logger = createLogger({ level: 'warn', destination: { write: (line: string) => void logs.push(line) } });
  const worker = await startTestWorker(harness, {}, { logger });
  each.defer(() => worker.stop());
  const events = Array.from({ length: n }, (_, i) => ({ batchId: `key-${i}`, name: `Key test ${i}`, subject: 'Maths' }));
  expect((await publishBatches(publishDepsOf(harness), events)).every((o) => o.ok)).toBe(true);
  return { harness, w: worker };
}

/** For a failure: what each batch that used more than one attempt recorded (its errors, with their calls). */
async function attemptsUsed(harness: Harness, rows: { id: number; batchId: string; attempts: number }[]): Promise<string> {
  const ids = rows.filter((r) => r.attempts !== 1).map((r) => r.id);
  if (ids.length === 0) return '';
  const { rows: events } = await harness.runtime.database.db.execute(
    sql`select b.batch_id, e.type, e.operation, e.outcome, e.http_status, e.attempt, e.error from batch_events e join batch_classes b on b.id = e.batch_row_id
         where e.batch_row_id in (${sql.join(
           ids.map((id) => sql`${id}`),
           sql`, `,
         )}) and (e.error is not null or e.outcome <> 'ok') order by e.id`,
  );
  return JSON.stringify(events, null, 1);
}

const countSynced = async (harness: Harness) => (await rowsOf(harness)).filter((r) => r.state === 'synced').length;

async function refusedGauge(url: string): Promise<number | undefined> {
  const text = (await call(`${url}/metrics`)).text;
  const line = /^classroom_sync_credentials_refused\{account="default"\} (\S+)$/m.exec(text);
  return line ? Number(line[1]) : undefined;
}

/**
 * Samples /metrics until stopped: what Prometheus would have scraped. Also notes each refused probe
 * the breaker records (by its time), to show the breaker stayed open through them.
 */
function sampleGauge(url: string, breakerState: () => Promise<BreakerState | undefined>): { stop(): Promise<{ gauge: number[]; probes: Set<string> }> } {
  const gauge: number[] = [];
  const probes = new Set<string>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const value = await refusedGauge(url).catch(() => undefined);
      if (value !== undefined) gauge.push(value);
      const probedAt = (await breakerState().catch(() => undefined))?.lastProbeAt;
      if (probedAt) probes.add(probedAt.toISOString());
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { gauge, probes };
    },
  };
}

/**
 * Runs deploy/alerts.yml over the sampled series with promtool, one sample per 30 s of rule time
 * (the run is seconds long; the rule waits a minute): does ClassroomSyncCredentialsRefused fire at
 * the end of the longest run of 1s, as an operator's Prometheus would have seen it?
 */
function alertFiresOver(samples: number[]): { fired: boolean; output: string } {
  let best = { end: -1, length: 0 };
  let run = 0;
  samples.forEach((v, i) => {
    run = v === 1 ? run + 1 : 0;
    if (run > best.length) best = { end: i, length: run };
  });
  const rule = (parse(readFileSync(ALERTS, 'utf8')) as { groups: { rules: { alert?: string; labels: object; annotations: object }[] }[] }).groups
    .flatMap((g) => g.rules)
    .find((r) => r.alert === 'ClassroomSyncCredentialsRefused')!;
  const dir = mkdtempSync(join(tmpdir(), 'alert-'));
  try {
    const test = {
      rule_files: [ALERTS],
      tests: [
        {
          interval: '30s',
          input_series: [{ series: 'classroom_sync_credentials_refused{account="default", instance="w1"}', values: samples.join(' ') }],
          alert_rule_test: [
            {
              eval_time: `${best.end * 30}s`,
              alertname: 'ClassroomSyncCredentialsRefused',
              exp_alerts: [{ exp_labels: { ...rule.labels, account: 'default' }, exp_annotations: rule.annotations }],
            },
          ],
        },
      ],
    };
    writeFileSync(join(dir, 'test.yml'), stringify(test));
    const { status, output } = promtool(['test', 'rules', 'test.yml'], { cwd: dir });
    return { fired: status === 0, output };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One mid-run refusal: what the remote answers, for how long, and how often the workers probe. */
interface MidRunRefusal {
  status: 401 | 403;
  forMs: number;
  probeEveryMs: number;
  /** Probes that must have been refused before the key works again (the breaker stays open through them). */
  refusedProbes: number;
}

const MID_RUN: [string, MidRunRefusal][] = [
  ['401 for 3 s', { status: 401, forMs: 3_000, probeEveryMs: 400, refusedProbes: 1 }],
  ['403 for 3 s', { status: 403, forMs: 3_000, probeEveryMs: 400, refusedProbes: 1 }],
  // Longer than several probe intervals: each refused probe leaves the batches as they were. (1 s is
  // also the watch's tick, so the probes really come that often; 400 ms ones come about once a second.)
  ['401 for 6 s, probing every 1 s', { status: 401, forMs: 6_000, probeEveryMs: 1_000, refusedProbes: 3 }],
];

describe.each(MID_RUN)('a key refused mid-run (%s)', (_, refusal) => {
  it('every batch syncs with no operator action, one class each, attempts untouched; metric, alert, /readyz and status say so', async () => {
    const n = 40;
    const logs: string[] = [];
    const { harness, w } = await start(n, logs, refusal.probeEveryMs);
    const breaker = harness.runtime.remotes.default.breaker;
    await waitFor(async () => (await countSynced(harness)) >= 8, 'a first share of batches synced');
    const sampler = sampleGauge(w.url, () => breaker.state());
    harness.sandbox.faults.set({ latencyMs: 25, refuseKey: { status: refusal.status, forMs: refusal.forMs } });

    // While refused: the fleet says so, and nothing moves to failed.
    await waitFor(async () => (await refusedGauge(w.url)) === 1, 'the credentials gauge to read 1', 10_000);
    const ready = await call(`${w.url}/readyz`);
    expect(ready.status).toBe(200);
    // Since when and the status; what the remote said is for the log and `status`, not the open endpoint.
    const refusedSince = new RegExp(`^credentials refused since \\S+ \\(HTTP ${refusal.status}\\)$`);
    expect(ready.body).toMatchObject({ status: 'degraded', checks: { credentials: expect.stringMatching(refusedSince) } });
    expect(await refusedKeyLine(breaker, refusal.probeEveryMs)).toMatch(/credentials refused since .*: its batches wait, unchanged/);
    const duringRefusal = await countSynced(harness);

    const all = await untilAllSynced(harness, 'all', 60_000);
    const { gauge, probes } = await sampler.stop();

    expect(all).toHaveLength(n);
    expect(duringRefusal).toBeLessThan(n);
    expect(
      all.map((r) => r.attempts).filter((a) => a !== 1),
      await attemptsUsed(harness, all),
    ).toEqual([]);
    const truth = harness.sandbox.state({ classes: false });
    for (const r of all) expect(truth.bySentName[r.className], r.batchId).toBe(1);
    expect(truth.classCount).toBe(n);
    const failures = await harness.runtime.database.db.execute(sql`select count(*)::int as n from batch_events where to_state in ('failed', 'needs_review')`);
    expect(failures.rows[0]).toEqual({ n: 0 });
    // The remote did refuse calls, with this status; the probes it refused left the breaker open;
    // and the breaker is closed again.
    const refusedCalls = Object.values(truth.calls.byOperation).reduce((sum, op) => sum + (op.outcomes[`http${refusal.status}`] ?? 0), 0);
    expect(refusedCalls).toBeGreaterThan(0);
    expect(probes.size, [...probes].join(', ')).toBeGreaterThanOrEqual(refusal.refusedProbes);
    expect(await breaker.state()).toBeUndefined();
    expect(await refusedGauge(w.url)).toBe(0);
    expect(gauge).toContain(1);
    const alert = alertFiresOver(gauge);
    expect(alert.fired, alert.output).toBe(true);
    // One error line when the breaker opened, one when it closed; no line per batch.
    const lines = logs.map((l) => JSON.parse(l) as { level: number; msg: string; breaker?: string; err?: { message?: string } });
    expect(lines.filter((l) => l.breaker === 'open')).toMatchObject([{ level: 50, msg: expect.stringMatching(/refuses the API key/) }]);
    expect(lines.filter((l) => l.breaker === 'closed')).toMatchObject([{ msg: expect.stringMatching(/accepts the API key again/) }]);
    // Any other line is a finding; its error (if it has one) says which.
    expect(lines.filter((l) => !l.breaker).map((l) => (l.err?.message ? `${l.msg}: ${l.err.message}` : l.msg))).toEqual([]);
  });
});

describe('a key refused from the first call', () => {
  it('with 403: batches wait (no state change, no attempt) instead of being written off, then sync by themselves', async () => {
    const n = 12;
    const harness = await each.harness({ env: { SYNC_CONCURRENCY: '4', CLASSROOM_KEY_PROBE_EVERY: '300ms' } });
    harness.sandbox.faults.set({ refuseKey: { status: 403 } });
    const worker = await startTestWorker(harness);
    each.defer(() => worker.stop());
    const events = Array.from({ length: n }, (_, i) => ({ batchId: `first-${i}`, name: `First call ${i}`, subject: 'Maths' }));
    await publishBatches(publishDepsOf(harness), events);

    await waitFor(async () => harness.runtime.remotes.default.breaker.state(), 'the breaker to open on a confirmed 403', 10_000);
    // Let the fleet sit refused for a while: three probes fail, and the batches keep waiting.
    const probes = new Set<string>();
    await waitFor(
      async () => {
        const probedAt = (await harness.runtime.remotes.default.breaker.state())?.lastProbeAt;
        if (probedAt) probes.add(probedAt.toISOString());
        return probes.size >= 3;
      },
      'three failed probes',
      20_000,
    );
    const waiting = await rowsOf(harness);
    expect(waiting.map((r) => r.state).filter((s) => s !== 'pending')).toEqual([]);
    expect(waiting.every((r) => r.attempts <= 1 && r.lastError === null)).toBe(true);
    const state = await harness.runtime.remotes.default.breaker.state();
    expect(state).toMatchObject({ status: 403, lastProbe: expect.stringMatching(/403/) });

    harness.sandbox.faults.set({});
    const done = await untilAllSynced(harness, 'all', 30_000);
    expect(done.map((r) => r.attempts).filter((a) => a !== 1)).toEqual([]);
    expect(harness.sandbox.state({ classes: false }).classCount).toBe(n);
  });
});

describe('a 403 about one institute, not the key', () => {
  it("uses the batch's attempts (a harmless read works, but a refusal of the key may just have ended), then fails it as forbidden; the others sync", async () => {
    // Account north serves inst-north and inst-ghost; the remote knows only inst-north, so add-class
    // for inst-ghost answers 403 while the probe (a listing of inst-north) works.
    const file = writeAccountsFile([{ name: 'north', instituteIds: ['inst-north', 'inst-ghost'] }]);
    each.defer(() => file.remove());
    const harness = await each.harness({
      env: { CLASSROOM_ACCOUNTS_FILE: file.path, CLASSROOM_INSTITUTE_ID: 'inst-north', SYNC_ATTEMPTS: '3' },
      sandbox: { instituteIds: ['inst-north'] },
    });
    each.syncWorker(harness.runtime);
    const events = [
      { batchId: 'ghost-1', name: 'Ghost class', subject: 'Maths', instituteId: 'inst-ghost' },
      { batchId: 'real-1', name: 'Real class', subject: 'Maths', instituteId: 'inst-north' },
    ];
    expect((await publishBatches(publishDepsOf(harness), events)).every((o) => o.ok)).toBe(true);

    const ghost = await waitFor(async () => (await rowsOf(harness)).find((r) => r.batchId === 'ghost-1' && r.state === 'failed'), 'ghost-1 failed', 20_000);
    expect(ghost).toMatchObject({ attempts: 3, lastErrorKind: 'forbidden', classId: null });
    expect(ghost.lastError).toMatch(/403/);
    expect(ghost.lastError).toMatch(/inst-ghost.*the remote refuses this batch/);
    expect(await harness.runtime.remotes.default.breaker.state()).toBeUndefined();
    await untilAllSynced(harness, ['real-1'], 20_000);
    expect(harness.sandbox.state().calls.byOperation.addClass?.outcomes.http403).toBe(3);
  });
});
