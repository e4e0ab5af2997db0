// Prometheus metrics. Each `createMetrics()` owns its own Registry (never prom-client's global
// one), so several workers or tests can live in one process without clashing names.
//
// Three kinds of source feed it:
//   - events pushed while work happens: remote calls (RemoteObservers.afterCall), rate-limit
//     waits, sync job results, state transitions, reconciliation runs;
//   - values read at scrape time (`refresh`): batches by state from Postgres, job counts from
//     BullMQ. Reading them at scrape time keeps every process's answer true for the whole fleet
//     (/metrics shares its answers and reads between scrapes: see scrape-guard.ts);
//   - Node's default process metrics.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RemoteObservers } from '../accounts/remotes.ts';
import { QUEUE_LANES } from '../read-model/index.ts';
import type { SyncJobResult } from '../sync/processor.ts';
import type { Transition } from '../sync/machine.ts';
import type { DeliveryOutcome, DeliveryThreadState } from '../webhooks/index.ts';
import { type ScrapeSource, scrapeGauges } from './scrape-gauges.ts';
import { type ScrapeSources, refreshScrapeGauges } from './scrape.ts';
import { webhookMetrics } from './webhooks.ts';

export type { ScrapeSources } from './scrape.ts';

/** What the reconciliation reports after each run; see `Metrics.recordReconciliation`. */
export interface ReconciliationRun {
  /** Items found per category (e.g. `{ in_sync: 120, drift: 2, orphan: 1 }`); any category names. */
  counts: Readonly<Record<string, number>>;
  finishedAt: Date;
  /** False when the run could not finish; its counts are then ignored. */
  ok: boolean;
  durationMs?: number;
}

export interface Metrics {
  readonly registry: Registry;
  /** Spread into `createRuntime(config, { ...metrics.runtimeOptions })`. */
  readonly runtimeOptions: Required<RemoteObservers>;
  /** Pass as `createSyncWorker(runtime, { onTransition })`. */
  onTransition(transition: Transition): void;
  /** Pass as `createSyncWorker(runtime, { onJobResult })`. */
  recordJob(result: SyncJobResult): void;
  /** Pass as `startWebhookThread({ onOutcome })`: how each webhook attempt ended. */
  recordWebhook(outcome: DeliveryOutcome): void;
  /** Pass as `startWebhookThread(deps, { onState })`: the delivery thread's state (WebhookMetrics). */
  recordWebhookThread(state: DeliveryThreadState): void;
  /**
   * Called by the reconciliation after every run. A successful run replaces the per-category
   * counts and moves the last-success time; a failed one only counts as a failed run.
   */
  recordReconciliation(run: ReconciliationRun): void;
  /** Reads the scrape-time gauges (`only` these sources; default all). Never throws. /metrics shares it: scrape-guard.ts. */
  refresh(sources: ScrapeSources, only?: readonly ScrapeSource[]): Promise<void>;
}

const SECONDS_TO_SYNCED = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1_800, 3_600, 4 * 3_600, 24 * 3_600];
const CALL_SECONDS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const WAIT_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface MetricsOptions {
  defaultMetrics?: boolean;
  /** SYNC_LIVE_LANE_BOUND, exported as classroom_sync_live_lane_bound_seconds for the alert to compare with. */
  liveLaneBoundMs?: number;
  /** Each account's rate limit, exported as classroom_sync_account_rate_limit_per_minute (usage = calls ÷ limit). */
  accounts?: readonly { name: string; ratePerMinute: number }[];
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) addProcessMetrics(registry);
  const registers = [registry];
  // Created in this order, which is the order of the families in /metrics.
  const sync = syncMetrics(registers);
  const remote = remoteCallMetrics(registers, options.accounts?.map((a) => a.name) ?? []);
  const reconcile = reconcileMetrics(registers);
  const gauges = scrapeGauges(registers);
  if (options.liveLaneBoundMs !== undefined) liveLaneBound(registers, options.liveLaneBoundMs);
  if (options.accounts) accountLimits(registers, options.accounts);
  return {
    registry,
    runtimeOptions: remote,
    onTransition: sync.onTransition,
    recordJob: sync.recordJob,
    ...webhookMetrics(registers),
    recordReconciliation: reconcile.record,
    refresh: (sources, only) => refreshScrapeGauges(gauges, sources, only),
  };
}

/** The configured bound on a live batch's wait: the alert fires when the live lane's oldest passes it. */
function liveLaneBound(registers: Registry[], ms: number): void {
  new Gauge({
    name: 'classroom_sync_live_lane_bound_seconds',
    help: 'SYNC_LIVE_LANE_BOUND: how long the oldest live batch may wait before ClassroomSyncLiveLaneSlow fires.',
    registers,
  }).set(ms / 1000);
}

/** Each account's configured limit: dashboards divide an account's call rate by it. */
function accountLimits(registers: Registry[], accounts: readonly { name: string; ratePerMinute: number }[]): void {
  const gauge = new Gauge({
    name: 'classroom_sync_account_rate_limit_per_minute',
    help: "Each account's configured limit of remote calls per minute (its ratePerMinute, or CLASSROOM_RATE_LIMIT_PER_MINUTE).",
    labelNames: ['account'] as const,
    registers,
  });
  for (const { name, ratePerMinute } of accounts) gauge.labels({ account: name }).set(ratePerMinute);
}

/** Node's default process metrics, less the ones `promtool check metrics` rejects. */
function addProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters: `promtool check metrics` rejects them, and handle counts add little.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
    registry.removeSingleMetric(name);
  }
}

/** Sync job results, state transitions, and event-to-synced time: what the sync worker reports. */
function syncMetrics(registers: Registry[]): Pick<Metrics, 'onTransition' | 'recordJob'> {
  const jobs = new Counter({
    name: 'classroom_sync_jobs_total',
    help: 'Sync job runs by result: completed, deferred (waits without using an attempt), retrying (attempt failed, will retry), failed (no more attempts).',
    labelNames: ['result'] as const,
    registers,
  });
  const transitions = new Counter({
    name: 'classroom_sync_transitions_total',
    help: 'Batch state transitions made by sync runs in this process.',
    labelNames: ['from', 'to'] as const,
    registers,
  });
  const toSynced = new Histogram({
    name: 'classroom_sync_event_to_synced_seconds',
    help: 'Time from a batch event being recorded (receivedAt) to the batch reaching synced (syncedAt).',
    buckets: SECONDS_TO_SYNCED,
    registers,
  });
  // Every series that can be known in advance starts at 0, so rate() and absent() behave from the first scrape.
  for (const result of ['completed', 'deferred', 'retrying', 'failed'] as const) jobs.labels({ result }).inc(0);
  return {
    onTransition({ from, to, row }) {
      transitions.labels({ from, to }).inc();
      if (to === 'synced' && row.syncedAt && row.receivedAt) {
        toSynced.observe(Math.max(0, row.syncedAt.getTime() - row.receivedAt.getTime()) / 1000);
      }
    },
    recordJob(result) {
      jobs.labels({ result }).inc();
    },
  };
}

/** Remote calls by operation and outcome, their latency, and rate-limit waits: fed by the runtime's hooks. */
function remoteCallMetrics(registers: Registry[], accounts: readonly string[]): Metrics['runtimeOptions'] {
  const calls = new Counter({
    name: 'classroom_sync_remote_calls_total',
    help: 'Calls to the remote classroom service by account, operation and outcome (ok, not_sent, rejected, throttled, outcome_unknown, credentials_refused).',
    labelNames: ['account', 'operation', 'outcome'] as const,
    registers,
  });
  const callSeconds = new Histogram({
    name: 'classroom_sync_remote_call_duration_seconds',
    help: 'Latency of calls to the remote classroom service by account, operation and outcome, from send to classified answer.',
    labelNames: ['account', 'operation', 'outcome'] as const,
    buckets: CALL_SECONDS,
    registers,
  });
  const reservations = new Counter({
    name: 'classroom_sync_rate_limit_slots_total',
    help: "Slots of an account's shared remote rate limit granted to this process, by account and lane (under_way, live, operator, backfill).",
    labelNames: ['account', 'lane'] as const,
    registers,
  });
  const rateLimitWaits = new Histogram({
    name: 'classroom_sync_rate_limit_wait_seconds',
    help: "Waits for a slot of an account's shared remote rate limit, by account (only calls that had to wait are counted).",
    labelNames: ['account'] as const,
    buckets: WAIT_SECONDS,
    registers,
  });
  // Each account's waits and slots exist from the first scrape (a quiet account's are 0, not absent).
  for (const account of accounts) {
    rateLimitWaits.zero({ account });
    for (const lane of QUEUE_LANES) reservations.labels({ account, lane }).inc(0);
  }
  return {
    afterCall(call, account) {
      const labels = { account, operation: call.operation, outcome: call.outcome };
      calls.labels(labels).inc();
      callSeconds.labels(labels).observe(call.durationMs / 1000);
    },
    onRateLimitWait(ms, account) {
      rateLimitWaits.labels({ account }).observe(ms / 1000);
    },
    onRateLimitReserve(lane, account) {
      reservations.labels({ account, lane }).inc();
    },
  };
}

/** The last reconciliation run: items per category, runs by result, when it finished and how long it took. */
function reconcileMetrics(registers: Registry[]) {
  const items = new Gauge({
    name: 'classroom_sync_reconcile_items',
    help: 'Items per category found by the last successful reconciliation run.',
    labelNames: ['category'] as const,
    registers,
  });
  const runs = new Counter({
    name: 'classroom_sync_reconcile_runs_total',
    help: 'Reconciliation runs by result (ok, error).',
    labelNames: ['result'] as const,
    registers,
  });
  const lastSuccess = new Gauge({
    name: 'classroom_sync_reconcile_last_success_timestamp_seconds',
    help: 'Unix time when the last successful reconciliation run finished (absent until one has).',
    registers,
  });
  const lastRun = new Gauge({
    name: 'classroom_sync_reconcile_last_run_timestamp_seconds',
    help: 'Unix time when the last reconciliation run finished, successful or not (absent until one has).',
    registers,
  });
  const duration = new Gauge({
    name: 'classroom_sync_reconcile_duration_seconds',
    help: 'How long the last reconciliation run took (absent until one has finished).',
    registers,
  });
  runs.labels({ result: 'ok' }).inc(0);
  runs.labels({ result: 'error' }).inc(0);
  // A gauge without labels starts at 0, which would claim a pass finished in 1970 (and would make
  // `time() - last_success` an alert that fires at start). Absent until a pass says otherwise.
  for (const gauge of [lastSuccess, lastRun, duration]) gauge.remove();
  return {
    record(run: ReconciliationRun): void {
      const finished = run.finishedAt.getTime() / 1000;
      runs.labels({ result: run.ok ? 'ok' : 'error' }).inc();
      lastRun.set(finished);
      if (run.durationMs !== undefined) duration.set(run.durationMs / 1000);
      if (!run.ok) return;
      // Replace, not merge: a category absent from this run has no items now.
      items.reset();
      for (const [category, n] of Object.entries(run.counts)) items.labels({ category }).set(n);
      lastSuccess.set(finished);
    },
  };
}
