// deploy/alerts.yml: promtool accepts the rules and passes their unit tests (deploy/alerts.test.yml);
// every rule is tested firing and quiet, carries a summary, a description and a runbook link to a
// heading that exists in docs/operations.md, and uses only series /metrics exports. Also: the gauge behind
// ClassroomSyncQueueStalled moves with the queue.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Job, Queue, Worker } from 'bullmq';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { headingAnchors } from '../helpers/markdown.ts';
import { checkSyntax, exportedSeries, promtool, scrapeAfterWork, unexportedUses } from '../helpers/promql.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEPLOY = `${ROOT}deploy`;

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleTest {
  alertname: string;
  eval_time: string;
  exp_alerts?: unknown[] | null;
}

const rules: Rule[] = (parse(readFileSync(`${DEPLOY}/alerts.yml`, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
const unitTests = parse(readFileSync(`${DEPLOY}/alerts.test.yml`, 'utf8')) as { rule_files: string[]; tests: { name: string; alert_rule_test?: RuleTest[] }[] };

describe('deploy/alerts.yml', () => {
  it('promtool check rules accepts it, counting every rule', () => {
    const { status, output } = promtool(['check', 'rules', 'alerts.yml'], { cwd: DEPLOY });
    expect(status, output).toBe(0);
    expect(output).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it('promtool test rules passes deploy/alerts.test.yml', () => {
    const { status, output } = promtool(['test', 'rules', 'alerts.test.yml'], { cwd: DEPLOY });
    expect(status, output).toBe(0);
    expect(output).toContain('SUCCESS');
  });

  it('has the alerts issue 9 asks for', () => {
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'ClassroomSyncWorkerDown',
        'ClassroomSyncSyncFailures',
        'ClassroomSyncNeedsReview',
        'ClassroomSyncQueueStalled',
        'ClassroomSyncReconcileNotSucceeding',
        'ClassroomSyncRemoteThrottled',
        'ClassroomSyncRemoteErrors',
      ]),
    );
  });

  it('gives every rule a severity, summary, description and a runbook_url whose anchor is a heading of docs/operations.md', () => {
    const anchors = headingAnchors(`${ROOT}docs/operations.md`);
    const names = new Set<string>();
    for (const rule of rules) {
      const name = rule.alert;
      expect(name, `a recording rule or unnamed rule: ${JSON.stringify(rule)}`).toMatch(/^ClassroomSync\w+$/);
      expect(names.has(name!), `${name} defined twice`).toBe(false);
      names.add(name!);
      expect(['critical', 'warning'], `${name} severity`).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary?.trim(), `${name} summary`).toBeTruthy();
      expect(rule.annotations?.description?.trim().length ?? 0, `${name} description`).toBeGreaterThan(40);
      const url = rule.annotations?.runbook_url ?? '';
      const anchor = `runbook-${name!.toLowerCase()}`;
      expect(url, `${name} runbook_url`).toBe(`docs/operations.md#${anchor}`);
      expect(anchors.has(anchor), `docs/operations.md has no heading "### Runbook: ${name}" (anchor #${anchor})`).toBe(true);
    }
  });

  it('has unit tests in which every rule fires, and in which it stays quiet', () => {
    expect(unitTests.rule_files).toEqual(['alerts.yml']);
    const cases = unitTests.tests.flatMap((t) => t.alert_rule_test ?? []);
    const names = rules.map((r) => r.alert!);
    for (const name of names) {
      const mine = cases.filter((c) => c.alertname === name);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length > 0),
        `${name} is never expected to fire`,
      ).toBe(true);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length === 0),
        `${name} is never expected to stay quiet`,
      ).toBe(true);
    }
    for (const c of cases) expect(names, `test case for unknown alert ${c.alertname}`).toContain(c.alertname);
  });

  describe('against a real /metrics', () => {
    const { h } = useHarness();

    it('uses only series and labels /metrics exports (and up)', async () => {
      const exprs = rules.map((r) => ({ where: r.alert!, expr: r.expr }));
      expect(checkSyntax(exprs).status).toBe(0);
      const problems = unexportedUses(exprs, exportedSeries(await scrapeAfterWork(h)));
      expect(problems).toEqual([]);
    });
  });
});

describe('classroom_sync_queue_oldest_waiting_seconds (ClassroomSyncQueueStalled reads it)', () => {
  const { h, defer } = useHarness();
  let queue: Queue;
  const metrics = createMetrics({ defaultMetrics: false });
  /** Now, for the gauge: a fixed time, years before the jobs a worker really runs here. */
  const T = Date.parse('2020-01-01T00:00:00Z');
  let clock = { now: () => T };

  beforeAll(() => {
    const probe = new Queue('age-probe', { connection: h.runtime.redis, prefix: h.config.queuePrefix });
    queue = probe;
    defer(() => probe.close());
  });

  async function age(): Promise<number | undefined> {
    await metrics.refresh({ db: h.runtime.database.db, queues: [queue], clock });
    const gauge = await metrics.registry.getSingleMetric('classroom_sync_queue_oldest_waiting_seconds')!.get();
    return gauge.values.find((v) => v.labels.queue === 'age-probe')?.value;
  }

  it("is 0 with nothing waiting, the head job's age while jobs wait, and falls when the head is taken", async () => {
    expect(await age()).toBe(0);
    const old = await queue.add('old', {}, { timestamp: T - 600_000 });
    await queue.add('newer', {}, { timestamp: T - 120_000 });
    // Later in the list, so not next in line; its age must not count.
    expect(await age()).toBe(600);

    await old.remove();
    expect(await age()).toBe(120);

    await queue.drain();
    expect(await age()).toBe(0);
  });

  it('counts a delayed (scheduled) job from when it became due, not from when it was added', async () => {
    const job = await queue.add('scheduled', {}, { timestamp: T - 3_600_000, delay: 3_600_000 - 30_000 });
    expect(await age()).toBe(0); // still delayed: not waiting
    await job.promote();
    expect(await age()).toBe(30);
    await queue.drain(true);
  });

  it('counts a retried job from its last attempt, not from when it was first added', async () => {
    const job = await queue.add('retried', {}, { timestamp: T - 3_600_000, attempts: 2, backoff: { type: 'fixed', delay: 3_600_000 } });
    const connection = createRedis(h.config.redisUrl, 'worker');
    const worker = new Worker(
      'age-probe',
      async () => {
        throw new Error('first attempt fails');
      },
      { connection, prefix: h.config.queuePrefix },
    );
    try {
      await waitFor(async () => (await job.getState()) === 'delayed', 'job delayed for its retry');
    } finally {
      await worker.close();
      connection.disconnect();
    }
    await job.promote();
    // Five seconds after its attempt started, whenever that was: five seconds old, not years.
    const attempted = (await Job.fromId(queue, job.id!))!.processedOn!;
    clock = { now: () => attempted + 5_000 };
    try {
      expect(await age()).toBe(5);
    } finally {
      clock = { now: () => T };
    }
    await queue.drain(true);
  });

  it('is absent, not stale, when Redis does not answer', async () => {
    const stopped = new Queue('age-probe', { connection: createRedis('redis://127.0.0.1:1', 'producer'), prefix: h.config.queuePrefix });
    stopped.on('error', () => {});
    try {
      await queue.add('waiting', {}, { timestamp: T - 60_000 });
      expect(await age()).toBe(60);
      await metrics.refresh({ db: h.runtime.database.db, queues: [stopped], timeoutMs: 300 });
      const gauge = await metrics.registry.getSingleMetric('classroom_sync_queue_oldest_waiting_seconds')!.get();
      expect(gauge.values).toEqual([]);
    } finally {
      await stopped.close().catch(() => {});
      await queue.drain();
    }
  });
});
