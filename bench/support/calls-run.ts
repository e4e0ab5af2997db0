// One scenario of bench:calls: a scratch database and queue prefix, an in-process sandbox admitting R
// calls a minute whose reads lag as the scenario says, one in-process worker whose limiter is set to
// the same R, N batches published at once; then what the calls went on, from the sandbox's side.
import type pg from 'pg';
import { publishBatches } from '../../src/intake/publish.ts';
import { publishDepsOf } from '../../src/runtime/runtime.ts';
import { FAULT_KINDS, type RunningSandbox } from '../../src/sandbox/index.ts';
import { FAULT_RATES, withInProcessFleet } from './in-process.ts';
import { round } from './report.ts';
import { benchEvents, sleep } from './scratch.ts';

const TERMINAL = `('synced', 'failed', 'needs_review', 'abandoned', 'cancelled')`;
const SAMPLE_EVERY_MS = 250;

export interface CallsScenario {
  /** The sandbox's read lag; 0 for none. */
  lagMs: number;
  /** Each delay uniform in [0, lagMs]; otherwise every delay is lagMs (readLagMinMs = readLagMs). */
  uniform: boolean;
  faults: boolean;
}

export interface CallsSettings {
  batches: number;
  /** R: the sandbox's calls a minute, and CLASSROOM_RATE_LIMIT_PER_MINUTE. */
  rate: number;
  seed: number;
}

export function scenarioLabel(s: CallsScenario): string {
  const lag = s.lagMs === 0 ? 'no lag' : s.uniform ? `lag [0, ${s.lagMs / 1000}] s` : `lag ${s.lagMs / 1000} s`;
  return `${lag}, ${s.faults ? 'faults' : 'no faults'}`;
}

export type CallsRun = Awaited<ReturnType<typeof measureCalls>>;

/** Reads that reached the sandbox before what they read was readable (classified as each call arrives). */
interface LagRefusals {
  /** get-class or edit-class of a class not readable yet: answered 404. */
  notFound: number;
  /** get-class of a readable class whose newly enabled join link is not readable yet: answered with no link. */
  noLink: number;
}

export async function measureCalls(scenario: CallsScenario, settings: CallsSettings) {
  const lag = scenario.lagMs ? { readLagMs: scenario.lagMs, ...(scenario.uniform ? {} : { readLagMinMs: scenario.lagMs }) } : {};
  const faults = { ...(scenario.faults ? { rates: FAULT_RATES } : {}), ...lag };
  const setup = {
    env: { CLASSROOM_RATE_LIMIT_PER_MINUTE: String(settings.rate) },
    sandbox: () => ({ rateLimitPerMinute: settings.rate, faults, seed: settings.seed }),
  };
  return withInProcessFleet(`calls-${scenario.lagMs}`, setup, async ({ sandbox, runtime, pool }) => {
    const refused = countLagRefusals(sandbox);
    try {
      const started = performance.now();
      await publishBatches(publishDepsOf(runtime), benchEvents('calls', settings.batches));
      const samples = await sampleUntilTerminal(sandbox, pool, boundMs(scenario, settings), scenarioLabel(scenario));
      const wallMs = performance.now() - started;
      const sandboxSide = fromSandbox(sandbox, refused.counts);
      const window = await steadyWindow(pool, samples, settings);
      return { scenario, label: scenarioLabel(scenario), ...sandboxSide, ...(await fromDatabase(pool)), window, wallMs: round(wallMs) };
    } finally {
      refused.stop();
    }
  });
}

/** Four times the run at 98 % of R, plus ten times the lag (the default patience), plus 5 minutes. */
function boundMs(scenario: CallsScenario, settings: CallsSettings): number {
  return 4 * ((3 * settings.batches) / (0.98 * settings.rate)) * 60_000 + 10 * scenario.lagMs + 5 * 60_000;
}

function countLagRefusals(sandbox: RunningSandbox): { counts: LagRefusals; stop: () => void } {
  const counts: LagRefusals = { notFound: 0, noLink: 0 };
  const stop = sandbox.onRequest((operation, request) => {
    if ((operation !== 'getClass' && operation !== 'editClass') || request.classId === undefined) return;
    const record = sandbox.store.get(request.classId);
    const now = Date.now();
    if (!record) return;
    if (now < record.readableFrom) counts.notFound++;
    else if (operation === 'getClass' && record.joinMagicLink !== '' && now < record.linkReadableFrom) counts.noLink++;
  });
  return { counts, stop };
}

interface Sample {
  /** Epoch ms. */
  t: number;
  /** Calls the sandbox admitted so far (answered, not refused by its rate limit). */
  admitted: number;
}

const admitted = (sandbox: RunningSandbox): number => {
  const calls = sandbox.stats.snapshot();
  const limited = Object.values(calls.byOperation).reduce((sum, op) => sum + (op.outcomes.rateLimited ?? 0), 0);
  return calls.totalCalls - limited;
};

/** Samples the sandbox's admitted calls until every batch is terminal or the bound has passed. */
async function sampleUntilTerminal(sandbox: RunningSandbox, pool: pg.Pool, bound: number, label: string): Promise<Sample[]> {
  const samples: Sample[] = [];
  const deadline = performance.now() + bound;
  let checked = 0;
  let shown = performance.now();
  for (;;) {
    const t = performance.now();
    samples.push({ t: Date.now(), admitted: admitted(sandbox) });
    if (t - checked >= 1_000) {
      checked = t;
      const { rows } = await pool.query<{ n: string }>(`select count(*) as n from batch_classes where state not in ${TERMINAL}`);
      const open = Number(rows[0]!.n);
      if (open === 0) break;
      if (t > deadline) {
        console.error(`${label}: ${open} batches still open after ${round(bound / 60_000, 1)} minutes; measuring what is done`);
        break;
      }
      if (t - shown > 30_000) {
        shown = t;
        console.error(`${label}: ${open} batches not terminal yet`);
      }
    }
    await sleep(Math.max(0, SAMPLE_EVERY_MS - (performance.now() - t)));
  }
  samples.push({ t: Date.now(), admitted: admitted(sandbox) });
  return samples;
}

/** The sandbox's own count of every call, by operation and outcome, and of the faults it injected. */
function fromSandbox(sandbox: RunningSandbox, lagRefused: LagRefusals) {
  const truth = sandbox.state({ classes: false });
  const ops = truth.calls.byOperation;
  const faultKinds: readonly string[] = FAULT_KINDS;
  const faultsByOperation = Object.fromEntries(
    Object.entries(ops).map(([op, c]) => [op, Object.entries(c.outcomes).reduce((sum, [o, n]) => sum + (faultKinds.includes(o) ? n : 0), 0)]),
  );
  // Each fault costs the call it failed; one on add-class leaves its outcome unknown, and only a
  // listing can settle that: one more call the fault forces.
  const forced = Object.values(truth.calls.faultsInjected).reduce((a, b) => a + b, 0) + (faultsByOperation.addClass ?? 0);
  return {
    seed: truth.seed,
    calls: truth.calls.totalCalls,
    callsByOperation: Object.fromEntries(Object.entries(ops).map(([op, c]) => [op, c.calls])),
    lagRefused: { ...lagRefused },
    listings: ops.listClasses?.calls ?? 0,
    rateLimited: Object.values(ops).reduce((sum, c) => sum + (c.outcomes.rateLimited ?? 0), 0),
    faultsInjected: truth.calls.faultsInjected,
    faultsByOperation,
    /** One call for each injected fault (the call it failed), and a listing for each on add-class (its outcome is unknown). */
    forced,
    classes: truth.classCount,
    duplicates: Object.values(truth.bySentName).reduce((sum, n) => sum + Math.max(0, n - 1), 0),
    peakCallsPerWindow: Object.values(truth.accounts)[0]?.peakCallsPerWindow ?? 0,
  };
}

/** End states, and the remote calls the audit trail recorded (not those it never sent). */
async function fromDatabase(pool: pg.Pool) {
  const states = await pool.query<{ state: string; n: string }>('select state, count(*) as n from batch_classes group by state');
  const audit = await pool.query<{ n: string }>(`select count(*) as n from batch_events where type = 'remote_call' and outcome is distinct from 'not_sent'`);
  return { states: Object.fromEntries(states.rows.map((r) => [r.state, Number(r.n)])), auditCalls: Number(audit.rows[0]!.n) };
}

/**
 * From the first synced batch to the last: batches a minute, (synced − 1) ÷ the window, over R ÷ 3;
 * and the calls the sandbox admitted in it, a minute, over R (samples interpolated at both ends).
 */
async function steadyWindow(pool: pg.Pool, samples: readonly Sample[], settings: CallsSettings) {
  const { rows } = await pool.query<{ first: Date | null; last: Date | null; n: string }>(
    `select min(synced_at) as first, max(synced_at) as last, count(*) as n from batch_classes where state = 'synced'`,
  );
  const { first, last } = rows[0]!;
  const synced = Number(rows[0]!.n);
  if (!first || !last || synced < 2) return { seconds: 0, synced, batchesPerMinute: 0, ofRateOver3: 0, rateUse: 0 };
  const minutes = (last.getTime() - first.getTime()) / 60_000;
  const batchesPerMinute = (synced - 1) / minutes;
  const calls = admittedAt(samples, last.getTime()) - admittedAt(samples, first.getTime());
  return {
    seconds: round(minutes * 60, 1),
    synced,
    batchesPerMinute: round(batchesPerMinute, 1),
    ofRateOver3: round(batchesPerMinute / (settings.rate / 3), 3),
    rateUse: round(calls / minutes / settings.rate, 3),
  };
}

function admittedAt(samples: readonly Sample[], t: number): number {
  const after = samples.findIndex((s) => s.t >= t);
  if (after <= 0) return after === 0 ? samples[0]!.admitted : (samples.at(-1)?.admitted ?? 0);
  const a = samples[after - 1]!;
  const b = samples[after]!;
  return b.t === a.t ? b.admitted : a.admitted + ((b.admitted - a.admitted) * (t - a.t)) / (b.t - a.t);
}
