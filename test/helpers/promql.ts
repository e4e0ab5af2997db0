// Checks shared by the alert-rule and Grafana-dashboard tests: running promtool, reading a
// Prometheus text exposition, and finding the metric names and labels a PromQL expression uses.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { runReconciliation } from '../../src/reconcile/run.ts';
import { reconcileOptionsOf } from '../../src/reconcile/settings.ts';
import { reconcileDepsOf } from '../../src/reconcile/setup.ts';
import { startTestWorker, call } from '../integration/http-helpers.ts';
import { untilSynced } from './batches.ts';
import { type Harness, publishDepsOf } from './harness.ts';
import { INSTALL_TEST_TOOLS, MissingToolError, promtoolPath } from './tools.ts';

/** Runs promtool; throws (never skips) with one line naming the fix when it is not installed. */
export function promtool(args: string[], options: { cwd?: string; input?: string } = {}): { status: number | null; output: string } {
  const command = promtoolPath();
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.error) throw new MissingToolError(`cannot run ${command} (${result.error.message}): run \`${INSTALL_TEST_TOOLS}\` as root, or set PROMTOOL`);
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** Labels Prometheus adds to every scraped series; dashboards and rules may always use them. */
export const TARGET_LABELS = new Set(['instance', 'job']);
/** Series Prometheus makes itself for every target. */
export const SYNTHETIC_SERIES = new Set(['up']);

/**
 * Series names a /metrics answer exports, each with the label names seen on its samples.
 * Families without samples are listed too (from `# TYPE`), with `sampled: false`.
 */
export function exportedSeries(exposition: string): Map<string, { labels: Set<string>; sampled: boolean }> {
  const series = new Map<string, { labels: Set<string>; sampled: boolean }>();
  const entry = (name: string) => {
    let found = series.get(name);
    if (!found) {
      found = { labels: new Set(), sampled: false };
      series.set(name, found);
    }
    return found;
  };
  for (const line of exposition.split('\n')) {
    const type = /^# TYPE ([a-zA-Z_:][\w:]*) (\w+)$/.exec(line);
    if (type) {
      const [, name, kind] = type as unknown as [string, string, string];
      const names = kind === 'histogram' ? ['_bucket', '_sum', '_count'] : kind === 'summary' ? ['', '_sum', '_count'] : [''];
      for (const suffix of names) entry(`${name}${suffix}`);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? \S+/.exec(line);
    if (!sample) continue;
    const found = entry(sample[1]!);
    found.sampled = true;
    for (const [, label] of (sample[2] ?? '').matchAll(/([a-zA-Z_]\w*)="(?:[^"\\]|\\.)*"/g)) found.labels.add(label!);
  }
  return series;
}

export interface Selector {
  name: string;
  /** Label names used in the selector's matchers, e.g. `{state="failed"}` → state. */
  labels: string[];
}

export interface ExprUse {
  selectors: Selector[];
  /** Label names of by / without / on / ignoring / group_left / group_right clauses. */
  groupingLabels: string[];
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan', 'atan2']);

/** Grafana's `$__rate_interval`-style variables replaced by values PromQL parses. */
export function substituteGrafanaVariables(expr: string): string {
  return expr.replace(/\[\s*\$\{?\w+\}?\s*\]/g, '[5m]').replace(/\$\{?\w+\}?/g, '1');
}

/**
 * The metric selectors and grouping labels of a PromQL expression. A lexical reading, not a parser:
 * pair it with `checkSyntax` (promtool's parser) so that what it reads is known to be valid PromQL.
 */
export function promqlUses(rawExpr: string): ExprUse {
  const blocks: string[] = [];
  let expr = substituteGrafanaVariables(rawExpr).replace(/\{[^}]*\}/g, (block) => `{#${blocks.push(block) - 1}}`);
  expr = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ').replace(/\[[^\]]*\]/g, ' ');
  const groupingLabels: string[] = [];
  expr = expr.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_all, _kw, list: string) => {
    groupingLabels.push(
      ...list
        .split(',')
        .map((l) => l.trim())
        .filter(Boolean),
    );
    return ' ';
  });
  const selectors: Selector[] = [];
  for (const match of expr.matchAll(/(?<![\w:.$#])([a-zA-Z_:][\w:]*)(?![\w:])(\s*\{#(\d+)\})?(?!\s*\()/g)) {
    const name = match[1]!;
    if (KEYWORDS.has(name)) continue;
    const block = match[3] === undefined ? '' : blocks[Number(match[3])]!;
    selectors.push({ name, labels: [...block.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)\s*"/g)].map((m) => m[1]!) });
  }
  return { selectors, groupingLabels };
}

/**
 * Problems with `exprs` against what /metrics exports: unknown series, label names no sample of
 * that series has, grouping labels none of the expression's series has. Empty when all is well.
 */
export function unexportedUses(exprs: readonly { where: string; expr: string }[], exported: ReturnType<typeof exportedSeries>): string[] {
  const problems: string[] = [];
  for (const { where, expr } of exprs) {
    const { selectors, groupingLabels } = promqlUses(expr);
    if (selectors.length === 0) problems.push(`${where}: no metric found in ${JSON.stringify(expr)}`);
    const labelsInExpr = new Set(['le', ...TARGET_LABELS]);
    for (const { name, labels } of selectors) {
      if (SYNTHETIC_SERIES.has(name)) continue;
      const series = exported.get(name);
      if (!series) {
        problems.push(`${where}: ${name} is not exported by /metrics`);
        continue;
      }
      for (const label of series.labels) labelsInExpr.add(label);
      for (const label of labels) {
        if (TARGET_LABELS.has(label) || series.labels.has(label)) continue;
        problems.push(series.sampled ? `${where}: ${name} has no label ${label}` : `${where}: ${name} had no samples to check label ${label} against`);
      }
    }
    for (const label of groupingLabels) {
      if (!labelsInExpr.has(label)) problems.push(`${where}: grouping label ${label} is on none of the series in ${JSON.stringify(expr)}`);
    }
  }
  return problems;
}

/** Runs every expression through promtool's parser (as recording rules); returns its output on failure. */
export function checkSyntax(exprs: readonly { where: string; expr: string }[]): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'promql-'));
  try {
    const rules = exprs.map(({ expr }, i) => `      - record: check:expr_${i}\n        expr: ${JSON.stringify(substituteGrafanaVariables(expr))}`);
    writeFileSync(join(dir, 'exprs.yml'), `groups:\n  - name: exprs\n    rules:\n${rules.join('\n')}\n`);
    return promtool(['check', 'rules', 'exprs.yml'], { cwd: dir });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A real worker's /metrics after it has synced a batch (remote calls, transitions, histograms) and
 * run a reconciliation pass, so nearly every family has samples whose labels can be checked.
 */
export async function scrapeAfterWork(h: Harness): Promise<string> {
  const worker = await startTestWorker(h, { RECONCILE_EVERY: '0' });
  try {
    await publishBatchCreated(publishDepsOf(h), { batchId: 'scrape-1', name: 'Scrape One', subject: 'Maths' });
    await untilSynced(h, 'scrape-1');
    // One pass now, reported to this worker's metrics as a scheduled pass would be.
    const { runtime, metrics } = worker;
    const report = await runReconciliation(reconcileDepsOf(runtime), { trigger: 'test', ...reconcileOptionsOf(h.config), onRun: metrics.recordReconciliation });
    if (!report.ok) throw new Error(`reconciliation pass failed: ${report.errors.join('; ')}`);
    const answer = await call(`${worker.url}/metrics`);
    if (answer.status !== 200) throw new Error(`/metrics answered ${answer.status}`);
    return answer.text;
  } finally {
    await worker.stop();
  }
}
