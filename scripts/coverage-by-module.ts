// `npm run test:coverage`'s last step: the inner loop (`npm test`) must exercise every module, so
// this prints the line coverage of each folder under src/ from coverage/coverage-summary.json and
// exits 1 naming any folder the inner loop leaves below FLOOR. The CLI's commands run as child
// processes in many tests, which V8 coverage of the test process does not see: src/cli counts only
// what runs in-process.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FLOOR = 50;

interface Totals {
  lines: { total: number; covered: number };
}

export function byModule(summary: Record<string, Totals>): Map<string, { total: number; covered: number }> {
  const modules = new Map<string, { total: number; covered: number }>();
  for (const dir of readdirSync(join(ROOT, 'src'), { withFileTypes: true })) {
    if (dir.isDirectory()) modules.set(dir.name, { total: 0, covered: 0 });
  }
  for (const [file, totals] of Object.entries(summary)) {
    if (file === 'total') continue;
    const [module = ''] = relative(join(ROOT, 'src'), file).split('/');
    const sum = modules.get(module);
    if (!sum) continue;
    sum.total += totals.lines.total;
    sum.covered += totals.lines.covered;
  }
  return modules;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const summary = JSON.parse(readFileSync(join(ROOT, 'coverage', 'coverage-summary.json'), 'utf8')) as Record<string, Totals>;
  const below: string[] = [];
  for (const [module, { total, covered }] of [...byModule(summary)].sort()) {
    const pct = total === 0 ? 0 : (100 * covered) / total;
    console.log(`${`src/${module}`.padEnd(20)} ${pct.toFixed(1).padStart(5)} % of ${total} lines`);
    if (pct < FLOOR) below.push(`src/${module} (${pct.toFixed(1)} %)`);
  }
  const total = summary.total?.lines;
  if (total) console.log(`${'all of src/'.padEnd(20)} ${((100 * total.covered) / total.total).toFixed(1).padStart(5)} % of ${total.total} lines`);
  if (below.length) {
    console.error(`npm test leaves these modules under ${FLOOR} % of their lines: ${below.join(', ')}. Add a test of them to the inner loop.`);
    process.exit(1);
  }
}
