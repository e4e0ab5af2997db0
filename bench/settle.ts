// Settling add-class calls of unknown outcome, at default settings: how they are settled (adopted,
// or "not listed" believed on measured_lag, witness or patience), how long that takes, and whether
// any batch ends with two classes.
//
//   npm run bench:settle                          # both scenarios, SYNC_READ_LAG default (30 s)
//   npm run bench:settle -- --read-lag 10s        # SYNC_READ_LAG and the sandbox's read lag 10 s
//   npm run bench:settle -- --scenario no-lag     # one scenario (no-lag or lag)
//
// Per scenario: a sandbox in this process that answers at once and fails ~15 % of calls (HTTP 5xx
// before storing, 5xx after storing, HTTP 200 with body status 500); in `lag` its reads also lag by
// [0, read lag] per class. One in-process worker (createSyncWorker) with no SYNC_* or
// CLASSROOM_TIMEOUT set (but SYNC_READ_LAG with --read-lag); 60 batches published at once; waits
// (at most 15 minutes) for all of them to be synced, failed or needs_review. A remote_call row's `at`
// is written when the call has ended (src/sync/journal.ts), so the end of a call is its `at`.
import { parseDuration } from '../src/config/duration.ts';
import { publishBatches } from '../src/intake/publish.ts';
import { publishDepsOf } from '../src/runtime/runtime.ts';
import type { SandboxState } from '../src/sandbox/index.ts';
import { FAULT_RATES, withInProcessFleet } from './support/in-process.ts';
import { type Machine, type Row, commit, machineAtEnd, machineAtStart, publish, quantile, round } from './support/report.ts';
import { argValue, benchEvents, type scratchPool, sleep } from './support/scratch.ts';

const SCENARIOS = ['no-lag', 'lag'] as const;
type Scenario = (typeof SCENARIOS)[number];
const BATCHES = 60;
const BOUND_MS = 15 * 60_000;
const SLOW_MS = 60_000;
type Pool = ReturnType<typeof scratchPool>;
interface Times {
  n: number;
  p50: number;
  p95: number;
  max: number;
}
/** One scenario's figures; `slowBatches`: those whose audit trail was printed (see `explain`). */
type Run = Awaited<ReturnType<typeof measure>>;

async function main(): Promise<void> {
  const flag = argValue('--read-lag');
  const readLagMs = flag === undefined ? undefined : parseDuration(flag);
  if (flag !== undefined && !readLagMs) throw new Error(`--read-lag must be a duration such as 10s (got ${flag})`);
  const only = argValue('--scenario');
  if (only !== undefined && !SCENARIOS.includes(only as Scenario)) throw new Error(`--scenario must be one of ${SCENARIOS.join(', ')}`);
  const scenarios = only ? [only as Scenario] : [...SCENARIOS];
  const machine = machineAtStart();
  const runs: Run[] = [];
  for (const scenario of scenarios) runs.push(await measure(scenario, readLagMs));
  report({ runs, readLagMs: runs[0]!.readLagMs, flag, only, machine });
}

/** One scenario on its own database, queue prefix, sandbox and worker; all removed afterwards. */
async function measure(scenario: Scenario, readLagFlagMs: number | undefined) {
  const seedFlag = argValue('--seed');
  const setup = {
    env: readLagFlagMs ? { SYNC_READ_LAG: `${readLagFlagMs}ms` } : {},
    sandbox: (config: { sync: { readLagMs: number } }) => ({
      faults: { rates: FAULT_RATES, ...(scenario === 'lag' ? { readLagMs: config.sync.readLagMs } : {}) },
      ...(seedFlag ? { seed: Number(seedFlag) } : {}),
    }),
  };
  return withInProcessFleet(`settle-${scenario}`, setup, async ({ sandbox, runtime, pool }) => {
    const readLag = runtime.config.sync.readLagMs;
    console.error(
      `${scenario}: SYNC_READ_LAG ${readLag / 1000} s (${readLagFlagMs ? '--read-lag' : 'default'}); sandbox read lag ${scenario === 'lag' ? `[0, ${readLag / 1000}] s` : 'none'}`,
    );
    const started = performance.now();
    const publishedAt = new Date();
    await publishBatches(publishDepsOf(runtime), benchEvents(scenario, BATCHES));
    await waitForTerminal(pool, scenario);
    const wallMs = performance.now() - started;
    const figures = await collect(pool, sandbox.state({ classes: false }));
    await explain(pool, figures.slowBatches, publishedAt);
    return { scenario, readLagMs: readLag, wallMs: round(wallMs), seed: sandbox.state({ classes: false }).seed, ...figures };
  });
}

async function waitForTerminal(pool: Pool, scenario: Scenario): Promise<void> {
  const deadline = performance.now() + BOUND_MS;
  let shown = performance.now();
  for (;;) {
    const { rows } = await pool.query<{ n: string }>(
      `select count(*) as n from batch_classes where state not in ('synced', 'failed', 'needs_review', 'abandoned')`,
    );
    const open = Number(rows[0]!.n);
    if (open === 0) return;
    if (performance.now() > deadline) return void console.error(`${scenario}: ${open} batches still open after ${BOUND_MS / 60_000} minutes`);
    if (performance.now() - shown > 30_000) {
      shown = performance.now();
      console.error(`${scenario}: ${open} batches not terminal yet`);
    }
    await sleep(250);
  }
}

/** Settled by: adopt, measured_lag, witness, patience, review, or the state it went to; `unsettled` if it never left creating. */
const SETTLES = `
  select b.batch_id, extract(epoch from (s.at - c.at)) * 1000 as ms,
         case when s.at is null then 'unsettled' when s.detail->>'resolution' = 'adopt' then 'adopt'
              when s.detail->>'resolution' = 'create' then coalesce(s.detail->'settledBy'->>'by', 'create')
              when s.detail->>'resolution' = 'review' then 'review' else s.to_state end as by
    from batch_events c join batch_classes b on b.id = c.batch_row_id
    left join lateral (select t.at, t.to_state, t.detail from batch_events t
                        where t.batch_row_id = c.batch_row_id and t.type = 'transition' and t.from_state = 'creating' and t.id > c.id
                        order by t.id limit 1) s on true
   where c.type = 'remote_call' and c.operation = 'addClass' and c.outcome = 'outcome_unknown'`;

/** Per synced batch: received → first add-class sent (its start: `at` − duration), and that → synced_at. */
const TO_SYNCED = `
  select b.batch_id, extract(epoch from (f.first - b.received_at)) * 1000 as wait_ms, extract(epoch from (b.synced_at - f.first)) * 1000 as ms
    from batch_classes b
    join (select batch_row_id, min(at - duration_ms * interval '1 ms') as first from batch_events
           where type = 'remote_call' and operation = 'addClass' and outcome <> 'not_sent' group by batch_row_id) f on f.batch_row_id = b.id
   where b.state = 'synced'`;

async function collect(pool: Pool, truth: SandboxState) {
  const states = await pool.query<{ state: string; n: string }>('select state, count(*) as n from batch_classes group by state');
  const settles = (await pool.query<{ batch_id: string; ms: number | null; by: string }>(SETTLES)).rows;
  const synced = (await pool.query<{ batch_id: string; wait_ms: number; ms: number }>(TO_SYNCED)).rows;
  const settledBy: Record<string, number> = { adopt: 0, measured_lag: 0, witness: 0, patience: 0 };
  for (const s of settles) settledBy[s.by] = (settledBy[s.by] ?? 0) + 1;
  const { rows: open } = await pool.query<{ batch_id: string }>(`select batch_id from batch_classes where state <> 'synced'`);
  const left = await pool.query<{ batch_id: string }>(`select distinct b.batch_id from batch_events e join batch_classes b on b.id = e.batch_row_id
     where e.type = 'transition' and e.from_state in ('synced', 'failed', 'needs_review')`);
  const slowBatches = new Set([
    ...settles.filter((s) => s.by === 'patience' || s.by === 'unsettled' || Number(s.ms) > SLOW_MS).map((s) => s.batch_id),
    ...synced.filter((s) => Number(s.ms) > SLOW_MS).map((s) => s.batch_id),
    ...open.map((r) => r.batch_id),
    ...left.rows.map((r) => r.batch_id),
  ]);
  return {
    states: Object.fromEntries(states.rows.map((r) => [r.state, Number(r.n)])),
    /** Batches that left a terminal state again (e.g. synced → link_enabled). */
    leftTerminal: left.rows.length,
    classes: truth.classCount,
    duplicates: Object.values(truth.bySentName).reduce((sum, n) => sum + Math.max(0, n - 1), 0),
    unknown: settles.length,
    settledBy,
    toSettle: times(settles.filter((s) => s.ms !== null).map((s) => Number(s.ms))),
    toSynced: times(synced.map((s) => Number(s.ms))),
    toFirstCall: times(synced.map((s) => Number(s.wait_ms))),
    faultsInjected: truth.calls.faultsInjected,
    /** Calls the sandbox answered, per operation. */
    callsByOperation: Object.fromEntries(Object.entries(truth.calls.byOperation).map(([op, c]) => [op, c.calls])),
    slowBatches: [...slowBatches].sort(),
  };
}

const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

function times(ms: number[]): Times {
  return { n: ms.length, p50: round(quantile(ms, 0.5)), p95: round(quantile(ms, 0.95)), max: round(Math.max(0, ...ms)) };
}

/** The audit trail of each surprising batch (settled by patience, over 60 s, not synced, left a terminal state), times from publishing. */
async function explain(pool: Pool, batchIds: string[], publishedAt: Date): Promise<void> {
  const lines: string[] = [];
  for (const batchId of batchIds.slice(0, 8)) {
    const { rows } = await pool.query<Record<string, unknown>>(
      `select round(extract(epoch from (e.at - $2::timestamptz)) * 1000) as t, e.type, e.from_state, e.to_state, e.operation, e.outcome,
              e.http_status, e.body_status, e.duration_ms, e.error, e.detail
         from batch_events e join batch_classes b on b.id = e.batch_row_id where b.batch_id = $1 order by e.id`,
      [batchId, publishedAt],
    );
    lines.push(`${batchId}:`);
    for (const r of rows) {
      const what = r.type === 'transition' ? `${r.from_state} → ${r.to_state}` : `${r.type} ${r.operation ?? ''} ${r.outcome ?? ''}`;
      const status = r.http_status || r.body_status ? ` http ${r.http_status ?? '-'} body ${r.body_status ?? '-'}` : '';
      const extra = [r.duration_ms !== null ? `${r.duration_ms} ms` : '', r.detail ? JSON.stringify(r.detail) : '', r.error ? String(r.error) : ''];
      lines.push(`  +${r.t} ms  ${what}${status} ${extra.filter(Boolean).join(' ')}`.trimEnd());
    }
  }
  if (batchIds.length > 8) lines.push(`(and ${batchIds.length - 8} more)`);
  for (const line of lines) console.error(line);
}

function report(r: { runs: Run[]; readLagMs: number; flag: string | undefined; only: string | undefined; machine: Machine }): void {
  const line = (t: Times) => `p50 ${(t.p50 / 1000).toFixed(1)} / p95 ${(t.p95 / 1000).toFixed(1)} / max ${(t.max / 1000).toFixed(1)} s (${t.n})`;
  const list = (o: Record<string, number>) =>
    Object.entries(o)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  const rows: Row[] = r.runs.flatMap((run) => {
    const s = run.scenario;
    const noLag = s === 'no-lag';
    return [
      {
        figure: `${s}: synced / failed / needs_review (of ${BATCHES})`,
        value: `${run.states.synced ?? 0} / ${run.states.failed ?? 0} / ${run.states.needs_review ?? 0} (${run.leftTerminal} left a terminal state on the way)`,
      },
      { figure: `${s}: remote classes / duplicates`, value: `${run.classes} / ${run.duplicates}`, goal: '0 duplicates', met: run.duplicates === 0 },
      { figure: `${s}: add-class calls of unknown outcome`, value: `${run.unknown} (faults injected, all calls: ${list(run.faultsInjected)})` },
      { figure: `${s}: settled by`, value: list(run.settledBy) },
      { figure: `${s}: end of unknown add-class → settled`, value: line(run.toSettle) },
      {
        figure: `${s}: first add-class → synced`,
        value: line(run.toSynced),
        ...(noLag ? { goal: 'max ≤ 60 s', met: run.toSynced.max <= SLOW_MS && run.toSynced.n === BATCHES } : {}),
      },
      { figure: `${s}: received → first add-class`, value: line(run.toFirstCall) },
      {
        figure: `${s}: remote calls (per batch)`,
        value: `${sum(run.callsByOperation)} (${(sum(run.callsByOperation) / BATCHES).toFixed(1)}): ${list(run.callsByOperation)}`,
      },
      { figure: `${s}: wall time, publish to all terminal`, value: `${(run.wallMs / 1000).toFixed(1)} s (sandbox seed ${run.seed})` },
    ];
  });
  const flags = [r.flag ? `--read-lag ${r.flag}` : '', r.only ? `--scenario ${r.only}` : ''].filter(Boolean).join(' ');
  publish({
    bench: r.flag ? `settle-read-lag-${r.readLagMs / 1000}s` : 'settle',
    title: `Settling unknown outcomes (bench:settle)${r.flag ? `, SYNC_READ_LAG ${r.readLagMs / 1000} s` : ''}`,
    command: `npm run bench:settle${flags ? ` -- ${flags}` : ''}`,
    machine: machineAtEnd(r.machine),
    figures: { readLagMs: r.readLagMs, runs: r.runs },
    rows,
    notes: [
      `Commit ${commit()}. Default settings (no SYNC_* or CLASSROOM_TIMEOUT set${r.flag ? `, but SYNC_READ_LAG=${r.flag}` : ''}: SYNC_READ_LAG ${r.readLagMs / 1000} s, so patience is ${(10 * r.readLagMs) / 1000} s; SYNC_SETTLE 5 s; CLASSROOM_TIMEOUT 10 s; SYNC_CONCURRENCY 8; 500 calls/min). One in-process worker (\`createSyncWorker\`), ${BATCHES} batches published at once.`,
      `Sandbox in-process, answers at once; every operation fails with HTTP 5xx before storing (5 %), 5xx after storing (5 %) or HTTP 200 with body status 500 (5 %). \`lag\`: each class (and each enabled join link) becomes readable after a random delay in [0, ${r.readLagMs / 1000}] s.`,
      'Settled: the first transition out of `creating` after the unknown call (adopt: `{"resolution":"adopt"}`; otherwise `settledBy.by`). Times from the end of the unknown call (its audit row is written when the call ends) to that transition; first add-class (its start) → synced_at, per synced batch.',
      'What bounds the times: a 5xx before storing is believed by measured_lag no sooner than CLASSROOM_TIMEOUT + 3 × the largest read lag seen + 0.5 s after the call ended (a witness is an add-class sent CLASSROOM_TIMEOUT + the larger of SYNC_READ_LAG and that bound after it, which a burst published at once does not have); received → first add-class is the queue and the rate limit (batches under way go first); with read lag, a read of a write sent before the learned delay of the account says it will show is a call more (src/sync/read-schedule.ts), hence the calls per batch.',
    ],
  });
}

await main();
