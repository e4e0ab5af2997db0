// How every benchmark reports: one JSON line (machine-readable), a table on the terminal, and its
// own section of bench/RESULTS.md (replaced on each run; other benchmarks' sections are kept).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

const RESULTS = fileURLToPath(new URL('../RESULTS.md', import.meta.url));
/** Section order in RESULTS.md. */
const ORDER = ['rate-limit', 'latency', 'cost', 'cost-node20', 'cost-node24', 'intake', 'reconcile', 'lanes', 'accounts', 'scale'];

export interface Machine {
  cores: number;
  cpu: string;
  node: string;
  /** 1-minute load average when the benchmark started and when it ended. */
  loadStart: number;
  loadEnd?: number;
}

export function machineAtStart(): Machine {
  const machine = { cores: cpus().length, cpu: cpus()[0]?.model.trim() ?? 'unknown', node: process.version, loadStart: round(loadavg()[0]!, 2) };
  if (machine.loadStart > machine.cores) {
    console.error(`note: load average ${machine.loadStart} on ${machine.cores} cores; CPU-bound figures (throughput, latency, intake) will come out low`);
  }
  return machine;
}

export function machineAtEnd(machine: Machine): Machine {
  return { ...machine, loadEnd: round(loadavg()[0]!, 2) };
}

export interface Row {
  figure: string;
  value: string;
  /** e.g. "≥ 0.97"; absent for figures without a goal. */
  goal?: string;
  met?: boolean;
}

export interface Report {
  bench: string;
  title: string;
  /** How to run it again, e.g. `npm run bench:latency`. */
  command: string;
  machine: Machine;
  /** Everything measured, for the JSON line. */
  figures: Record<string, unknown>;
  rows: Row[];
  /** A markdown table (its lines) after the rows, on the terminal and in RESULTS.md: figures side by side. */
  table?: string[];
  /** Settings and what was measured, one sentence each (RESULTS.md). */
  notes: string[];
}

/** Prints the JSON line and the table, and writes the section of RESULTS.md. */
export function publish(report: Report): void {
  console.log(JSON.stringify({ bench: report.bench, ...report.figures, machine: report.machine }));
  const width = Math.max(...report.rows.map((r) => r.figure.length));
  for (const row of report.rows) {
    const goal = row.goal ? `  (goal ${row.goal}: ${row.met ? 'met' : 'MISSED'})` : '';
    console.log(`${row.figure.padEnd(width)}  ${row.value}${goal}`);
  }
  console.log(`${'machine'.padEnd(width)}  ${describeMachine(report.machine)}`);
  if (report.table) console.log(['', ...report.table].join('\n'));
  writeSection(report.bench, renderSection(report));
}

export function describeMachine(m: Machine): string {
  return `${m.cores} cores (${m.cpu}), Node ${m.node}, load average ${m.loadStart} at start, ${m.loadEnd ?? '?'} at end`;
}

function renderSection(report: Report): string {
  const lines = [
    `## ${report.title}`,
    '',
    `\`${report.command}\` — ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${describeMachine(report.machine)}.`,
    '',
    '| figure | measured | goal |',
    '|---|---|---|',
    ...report.rows.map((r) => `| ${r.figure} | ${r.value} | ${r.goal ? `${r.goal} ${r.met ? '(met)' : '(**missed**)'}` : ''} |`),
    '',
    ...(report.table ? [...report.table, ''] : []),
    ...report.notes.map((n) => `- ${n}`),
  ];
  return lines.join('\n').trimEnd();
}

const HEADER = `# Benchmark results

The last figures of each benchmark under \`bench/\`, written by the benchmark itself (\`npm run bench\`
runs them all; \`npm run bench:<name>\` one). Each run replaces its own section. What each measures,
and why a figure misses its goal, is in docs/performance.md and in the notes below.
`;

function writeSection(bench: string, body: string): void {
  const current = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '';
  const sections = new Map<string, string>();
  for (const match of current.matchAll(/<!-- bench:([\w-]+) -->\n([\s\S]*?)\n<!-- \/bench:\1 -->/g)) sections.set(match[1]!, match[2]!);
  sections.set(bench, body);
  const names = [...ORDER.filter((n) => sections.has(n)), ...[...sections.keys()].filter((n) => !ORDER.includes(n))];
  const text = [HEADER, ...names.map((n) => `<!-- bench:${n} -->\n${sections.get(n)}\n<!-- /bench:${n} -->\n`)].join('\n');
  writeFileSync(RESULTS, text);
}

/** The commit measured (BENCH_COMMIT where there is no git checkout, e.g. a `git archive` of it). */
export function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return process.env.BENCH_COMMIT ?? 'unknown';
  }
}

/** Least-squares slope of y over x. */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return num / den;
}

/**
 * Rate over the steady part of a run: the slope of a counter sampled over time (ms), using only
 * the samples between 10 % and 90 % of the final count (start-up and drain left out). Per second.
 */
export function steadyRate(samples: readonly { t: number; count: number }[], from = 0.1, to = 0.9): number {
  const final = samples.at(-1)?.count ?? 0;
  const steady = samples.filter((s) => s.count >= final * from && s.count <= final * to).map((s) => ({ x: s.t, y: s.count }));
  return slope(steady) * 1000;
}

/** The q-quantile (0..1) of `values`, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function round(value: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
