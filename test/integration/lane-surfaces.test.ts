// The lanes as a user sees them: which lane each way in puts a batch in (`enqueue --backfill` and
// `import`: backfill; `retry` and a reconciliation repair: operator; the rest: live), and the lanes
// in `status`, `status --json`, the batch API and /metrics, for a known set of waiting batches.
// A sync worker runs only to make one batch fail; after that no worker runs, so batches wait
// where they were put. The tests run in order, each adding to the batches the last one left.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHttpServer } from '../../src/http/server.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { laneOfPriority } from '../../src/sync/lanes.ts';
import { BACKGROUND_QUEUE, SYNC_QUEUE, bothQueues } from '../../src/sync/queue.ts';
import { rowOf } from '../helpers/batches.ts';
import { killAllChildren, runCli, scratchDir } from '../helpers/cli.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, TOKEN, call } from './http-helpers.ts';
import { httpSettingsOf } from '../../src/http/settings.ts';

const { h, defer, syncWorker } = useHarness({ env: { API_TOKEN: TOKEN, SYNC_STUCK_AFTER: '1m' } });
defer(killAllChildren);

const event = (batchId: string) => ({ batchId, name: `Lane ${batchId}`, subject: 'Art' });
const ndjson = (...ids: string[]) => ids.map((id) => JSON.stringify(event(id))).join('\n');

/** The lane stored with the batch, then the queue its job waits in and the lane of its priority. */
async function placement(batchId: string): Promise<[string | undefined, string?, string?]> {
  const lane = (await rowOf(h, batchId))?.lane;
  const jobId = jobIdFor({ instituteId: h.config.classroom.instituteId, batchId });
  for (const queue of bothQueues(h.runtime.queue)) {
    const job = await queue.getJob(jobId);
    if (job) return [lane, queue.name, laneOfPriority(job.opts.priority)];
  }
  return [lane];
}

describe('the way in decides the lane', () => {
  it('retry puts a failed batch back in the operator lane', async () => {
    const worker = syncWorker(h.runtime);
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
    await publishBatches(publishDepsOf(h), [event('op-failed')]);
    await waitFor(async () => (await rowOf(h, 'op-failed'))?.state === 'failed', 'op-failed to fail');
    await worker.close(5_000);
    expect(await placement('op-failed')).toEqual(['live', SYNC_QUEUE, 'live']);

    const retry = await runCli(['retry', 'op-failed'], { env: h.env });
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stdout).toMatch(/^op-failed: failed → pending \(queued\)$/m);
    expect(await placement('op-failed')).toEqual(['operator', BACKGROUND_QUEUE, 'operator']);
  });

  it('enqueue --backfill and import put batches in the backfill lane; enqueue without it, in live', async () => {
    const backfill = await runCli(['enqueue', '--backfill'], { env: h.env, stdin: ndjson('back-enq-0', 'back-enq-1') });
    expect(backfill.code, backfill.stderr).toBe(0);
    const csv = join(scratchDir(), 'history.csv');
    writeFileSync(csv, 'batchId,name,subject\nback-imp-0,Old one,Art\nback-imp-1,Old two,Art\n');
    const imported = await runCli(['import', csv], { env: h.env });
    expect(imported.code, imported.stderr).toBe(0);
    const live = await runCli(['enqueue'], { env: h.env, stdin: ndjson('live-enq-0') });
    expect(live.code, live.stderr).toBe(0);

    for (const id of ['back-enq-0', 'back-enq-1', 'back-imp-0', 'back-imp-1'])
      expect(await placement(id), id).toEqual(['backfill', BACKGROUND_QUEUE, 'backfill']);
    expect(await placement('live-enq-0')).toEqual(['live', SYNC_QUEUE, 'live']);
    expect((await runCli(['status', 'back-imp-0'], { env: h.env })).stdout).toMatch(/^lane {8}backfill$/m);
  });

  it('a reconciliation repair puts a stuck batch in the operator lane', async () => {
    // Recorded, then its job lost and nothing done for an hour: what `reconcile` calls stuck.
    await publishBatches(publishDepsOf(h), [event('op-stuck')]);
    await h.runtime.queue.remove(jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'op-stuck' }));
    await h.runtime.database.pool.query(`update batch_classes set updated_at = now() - interval '1 hour' where batch_id = 'op-stuck'`);
    const reconcile = await runCli(['reconcile'], { env: h.env });
    expect(reconcile.code, reconcile.stderr).toBe(0);
    expect(reconcile.stdout).toMatch(/^stuck\s+1\s+requeue$/m);
    expect(await placement('op-stuck')).toEqual(['operator', BACKGROUND_QUEUE, 'operator']);
  });
});

describe('operators see the lanes', () => {
  it('status, status --json, the batch API and /metrics show each lane with its batches and its oldest', async () => {
    const server = await createHttpServer({
      ...h.runtime,
      httpSettings: httpSettingsOf(h.config),
      metrics: createMetrics({ defaultMetrics: false }),
      publish: publishDepsOf(h.runtime),
    });
    defer(() => server.close());
    const url = await server.listen({ port: 0, host: '127.0.0.1' });
    const posted = await call(`${url}/v1/batches`, { method: 'POST', headers: BEARER, json: [event('live-api'), event('under-way')] });
    expect(posted.status).toBe(202);
    // As a worker stopped just after its add-class left would leave it.
    await h.runtime.database.pool.query(`update batch_classes set state = 'creating', create_sent_at = now() where batch_id = 'under-way'`);
    // One batch per lane has waited a known time in it, longer than the others there.
    const waited: Record<string, [string, number]> = {
      under_way: ['under-way', 3],
      live: ['live-enq-0', 4],
      operator: ['op-failed', 5],
      backfill: ['back-imp-1', 6],
    };
    for (const [batchId, hours] of Object.values(waited)) {
      await h.runtime.database.pool.query(`update batch_classes set lane_since = now() - make_interval(hours => $2) where batch_id = $1`, [batchId, hours]);
    }

    const status = await runCli(['status'], { env: h.env });
    expect(status.stdout).toMatch(
      /^lanes: under way 1 \(oldest 3\.0 h\) · live 2 \(oldest 4\.0 h\) · operator 2 \(oldest 5\.0 h\) · backfill 4 \(oldest 6\.0 h\)$/m,
    );
    const { lanes } = JSON.parse((await runCli(['status', '--json'], { env: h.env })).stdout) as {
      lanes: Record<string, { batches: number; oldestSeconds: number }>;
    };
    expect(Object.fromEntries(Object.entries(lanes).map(([lane, stat]) => [lane, stat.batches]))).toEqual({ under_way: 1, live: 2, operator: 2, backfill: 4 });
    for (const [lane, [, hours]] of Object.entries(waited)) expect(lanes[lane]?.oldestSeconds, lane).toSatisfy(about(hours * 3_600));

    // The API shows the lane stored with the batch: a batch under way still says the lane it came in by.
    const laneOf = async (batchId: string) => (await call(`${url}/v1/batches/${batchId}`, { headers: BEARER })).body.lane;
    expect([await laneOf('live-api'), await laneOf('op-stuck'), await laneOf('back-enq-0'), await laneOf('under-way')]).toEqual([
      'live',
      'operator',
      'backfill',
      'live',
    ]);

    const metrics = (await call(`${url}/metrics`)).text;
    for (const [lane, n] of Object.entries({ under_way: 1, live: 2, operator: 2, backfill: 4 })) {
      expect(metrics).toMatch(new RegExp(`^classroom_sync_lane_batches\\{lane="${lane}"\\} ${n}$`, 'm'));
      const oldest = new RegExp(`^classroom_sync_lane_oldest_seconds\\{lane="${lane}"\\} (\\S+)$`, 'm').exec(metrics)?.[1];
      expect(Number(oldest), lane).toSatisfy(about(waited[lane]![1] * 3_600));
    }
  });
});

/** Within the minute after `seconds`: the time the test itself takes, and no more. */
const about = (seconds: number) => (value: number) => value >= seconds && value < seconds + 60;
