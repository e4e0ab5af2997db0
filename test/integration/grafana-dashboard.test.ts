// deploy/grafana-dashboard.json: imports cleanly (one ${DS_PROMETHEUS} input used by every panel and
// query), every query is valid PromQL (promtool's parser) that uses only series and labels a real
// worker's /metrics exports, and every classroom_sync_* metric is on it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeAccountsFile } from '../helpers/accounts.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { checkSyntax, exportedSeries, promqlUses, scrapeAfterWork, unexportedUses } from '../helpers/promql.ts';

const FILE = fileURLToPath(new URL('../../deploy/grafana-dashboard.json', import.meta.url));
// biome-ignore lint/suspicious/noTemplateCurlyInString: a placeholder written literally in the file under test
const DATASOURCE = { type: 'prometheus', uid: '${DS_PROMETHEUS}' };

interface Target {
  refId: string;
  expr: string;
  datasource?: unknown;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: unknown;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  title: string;
  __inputs: { name: string; type: string; pluginId: string }[];
  panels: Panel[];
  templating: { list: { name: string }[] };
}

const dashboard = JSON.parse(readFileSync(FILE, 'utf8')) as Dashboard;
const allPanels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queryPanels = allPanels.filter((p) => p.type !== 'row');
const exprs = queryPanels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr })));

describe('deploy/grafana-dashboard.json', () => {
  it('declares one Prometheus input, DS_PROMETHEUS, and every panel and query uses it', () => {
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    expect(dashboard.uid).toBe('classroom-sync');
    expect(queryPanels.length).toBeGreaterThan(15);
    for (const panel of queryPanels) {
      expect(panel.datasource, panel.title).toEqual(DATASOURCE);
      expect(panel.targets?.length, `${panel.title} has no query`).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        expect(target.datasource, `${panel.title} ${target.refId}`).toEqual(DATASOURCE);
        expect(target.expr.trim(), `${panel.title} ${target.refId}`).not.toBe('');
      }
    }
  });

  it('has unique panel ids and a layout inside 24 columns without overlaps', () => {
    const ids = allPanels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Map<string, string>();
    for (const { title, gridPos: g } of allPanels) {
      expect(g.x + g.w, title).toBeLessThanOrEqual(24);
      for (let x = g.x; x < g.x + g.w; x += 1) {
        for (let y = g.y; y < g.y + g.h; y += 1) {
          expect(cells.get(`${x},${y}`), `${title} overlaps`).toBeUndefined();
          cells.set(`${x},${y}`, title);
        }
      }
    }
  });

  it("uses only template variables it defines (or Grafana's own $__ ones)", () => {
    const defined = new Set(dashboard.templating.list.map((v) => v.name));
    for (const { where, expr } of exprs) {
      for (const [, name] of expr.matchAll(/\$\{?(\w+)\}?/g)) {
        if (!name!.startsWith('__')) expect(defined.has(name!), `${where} uses $${name}`).toBe(true);
      }
    }
  });

  it('has only valid PromQL (promtool parses every query)', () => {
    const { status, output } = checkSyntax(exprs);
    expect(status, output).toBe(0);
  });

  describe('against a real /metrics', () => {
    // Two accounts, so the per-account series (batches by account) are exported too.
    const accounts = writeAccountsFile([{ name: 'north' }, { name: 'south' }]);
    const { h, defer } = useHarness({ env: { CLASSROOM_ACCOUNTS_FILE: accounts.path } });
    defer(() => accounts.remove());
    let exported: ReturnType<typeof exportedSeries>;
    beforeAll(async () => {
      exported = exportedSeries(await scrapeAfterWork(h));
    });

    it('queries only series and labels that /metrics exports', () => {
      expect(unexportedUses(exprs, exported)).toEqual([]);
    });

    it('shows every classroom_sync_* metric', () => {
      const used = new Set(exprs.flatMap(({ expr }) => promqlUses(expr).selectors.map((s) => s.name)));
      const families = [...exported.keys()].filter((n) => n.startsWith('classroom_sync_') && !/_(sum|count)$/.test(n));
      expect(families.length).toBeGreaterThan(10);
      const missing = families.filter((name) => ![name, name.replace(/_bucket$/, '_sum'), name.replace(/_bucket$/, '_count')].some((n) => used.has(n)));
      expect(missing, 'exported but on no panel of deploy/grafana-dashboard.json').toEqual([]);
    });

    // The checks above are only as good as the reading of PromQL they rest on.
    it('would catch an unknown metric, an unknown label and an unknown grouping label', () => {
      expect(unexportedUses([{ where: 'ok', expr: 'sum by (state) (classroom_sync_batches{state="failed"})' }], exported)).toEqual([]);
      expect(unexportedUses([{ where: 'x', expr: 'sum(rate(classroom_sync_no_such_total[5m]))' }], exported)).toEqual([
        'x: classroom_sync_no_such_total is not exported by /metrics',
      ]);
      expect(unexportedUses([{ where: 'x', expr: 'max(classroom_sync_batches{stat="failed"})' }], exported)).toEqual([
        'x: classroom_sync_batches has no label stat',
      ]);
      expect(unexportedUses([{ where: 'x', expr: 'max by (operation) (classroom_sync_batches)' }], exported)).toEqual([
        'x: grouping label operation is on none of the series in "max by (operation) (classroom_sync_batches)"',
      ]);
      expect(unexportedUses([{ where: 'x', expr: 'vector(1)' }], exported)).toEqual(['x: no metric found in "vector(1)"']);
    });
  });
});

describe('promqlUses', () => {
  it('finds selectors and their matcher labels, skipping functions, keywords, strings, durations and numbers', () => {
    const use = promqlUses(
      'histogram_quantile(0.95, sum by (le, operation) (rate(a_bucket{outcome=~"ok|x", operation!="b"}[$__rate_interval] offset 5m))) / on() group_left max(b_total) * 1e3 > bool 2 and label_replace(c, "d", "$1", "e", "(.*)")',
    );
    expect(use.selectors).toEqual([
      { name: 'a_bucket', labels: ['outcome', 'operation'] },
      { name: 'b_total', labels: [] },
      { name: 'c', labels: [] },
    ]);
    expect(use.groupingLabels).toEqual(['le', 'operation']);
  });
});
