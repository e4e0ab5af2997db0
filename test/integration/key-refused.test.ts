// A refused key stops the fleet, not the batches: while the remote answers 401 (or a 403 about the
// key) to every call, no batch changes state or uses an attempt; workers probe and resume by
// themselves. Also what an operator sees meanwhile: the metric (and the alert rule on it), /readyz,
// and the line `classroom-sync status` prints.
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
import { createLogger } from '../../src/logger.ts';
import { rowsOf, untilAllSynced } from '../helpers/batches.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { promtool } from '../helpers/promql.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { call, startTestWorker } from './http-helpers.ts';

const ALERTS = fileURLToPath(new URL('../../deploy/alerts.yml', import.meta.url));

const each = useHarnessPerTest();

async function start(n: number, logs: string[]): Promise<{ harness: Harness; w: WorkerProcess }> {
  const harness = await each.harness({ env: { SYNC_CONCURRENCY: '4', CLASSROOM_KEY_PROBE_EVERY: '400ms' } });
  harness.sandbox.faults.set({ latencyMs: 25 });
  const logger = createLogger({ level: 'warn', destination: { write: (line: string) => void logs.push(line) } });
  const worker = await startTestWorker(harness, {}, { logger });
  each.defer(() => worker.stop());
  const events = Array.from({ length: n }, (_, i) => ({ batchId: `key-${i}`, name: `Key test ${i}`, subject: 'Maths' }));
  expect((await publishBatches(publishDepsOf(harness), events)).every((o) => o.ok)).toBe(true);
  return { harness, w: worker };
}

const countSynced = async (harness: Harness) => (await rowsOf(harness)).filter((r) => r.state === 'synced').length;

async function refusedGauge(url: string): Promise<number | undefined> {
  const text = (await call(`${url}/metrics`)).text;
  const line = /^classroom_sync_credentials_refused\{account="default"\} (\S+)$/m.exec(text);
  return line ? Number(line[1]) : undefined;
}

/** Samples /metrics until stopped: what Prometheus would have scraped. */
function sampleGauge(url: string): { stop(): Promise<number[]> } {
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const value = await refusedGauge(url).catch(() => undefined);
      if (value !== undefined) samples.push(value);
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
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

describe('a key refused for some seconds mid-run', () => {
  it('every batch syncs with no operator action, one class each, attempts untouched; metric, alert, /readyz and status say so', async () => {
    const n = 40;
    const logs: string[] = [];
    const { harness, w } = await start(n, logs);
    await waitFor(async () => (await countSynced(harness)) >= 8, 'a first share of batches synced');
    const sampler = sampleGauge(w.url);
    harness.sandbox.faults.set({ latencyMs: 25, refuseKey: { status: 401, forMs: 3_000 } });

    // While refused: the fleet says so, and nothing moves to failed.
    await waitFor(async () => (await refusedGauge(w.url)) === 1, 'the credentials gauge to read 1', 10_000);
    const ready = await call(`${w.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'degraded', checks: { credentials: expect.stringMatching(/^credentials refused since \S+ \(HTTP 401: /) } });
    expect(await refusedKeyLine(harness.runtime.remotes.default.breaker, 400)).toMatch(/credentials refused since .*: its batches wait, unchanged/);
    const duringRefusal = await countSynced(harness);

    const all = await untilAllSynced(harness, 'all', 60_000);
    const samples = await sampler.stop();

    expect(all).toHaveLength(n);
    expect(duringRefusal).toBeLessThan(n);
    expect(all.map((r) => r.attempts).filter((a) => a !== 1)).toEqual([]);
    const truth = harness.sandbox.state({ classes: false });
    for (const r of all) expect(truth.bySentName[r.className], r.batchId).toBe(1);
    const failures = await harness.runtime.database.db.execute(sql`select count(*)::int as n from batch_events where to_state in ('failed', 'needs_review')`);
    expect(failures.rows[0]).toEqual({ n: 0 });
    // The remote did refuse calls, and the breaker is closed again.
    const refusedCalls = Object.values(truth.calls.byOperation).reduce((sum, op) => sum + (op.outcomes.http401 ?? 0), 0);
    expect(refusedCalls).toBeGreaterThan(0);
    expect(await harness.runtime.remotes.default.breaker.state()).toBeUndefined();
    expect(await refusedGauge(w.url)).toBe(0);
    expect(samples).toContain(1);
    const alert = alertFiresOver(samples);
    expect(alert.fired, alert.output).toBe(true);
    // One error line when the breaker opened, one when it closed; no line per batch.
    const lines = logs.map((l) => JSON.parse(l) as { level: number; msg: string; breaker?: string });
    expect(lines.filter((l) => l.breaker === 'open')).toMatchObject([{ level: 50, msg: expect.stringMatching(/refuses the API key/) }]);
    expect(lines.filter((l) => l.breaker === 'closed')).toMatchObject([{ msg: expect.stringMatching(/accepts the API key again/) }]);
    expect(lines.filter((l) => !l.breaker).map((l) => l.msg)).toEqual([]);
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
    // Let the fleet sit refused for a while: probes keep failing, batches keep waiting.
    await new Promise((r) => setTimeout(r, 1_500));
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
