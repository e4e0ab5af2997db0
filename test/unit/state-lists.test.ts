// A list of batch states written out inside SQL escapes the type checker: a misspelt or removed
// state is still valid SQL text, and a copied list drifts from its twin. src/mapping writes every
// such list as `stateList(...)` (src/mapping/sql.ts) over a `readonly BatchState[]`; this keeps it so.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BATCH_STATES } from '../../src/db/schema/index.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const QUOTED_STATE = new RegExp(`'(?:${BATCH_STATES.join('|')})'`);

/** An SQL list: `<left> [not] in (…)` or `array[…]`, its items with no nested parentheses. */
const LIST = /(\w+(?:\.\w+)?)?\s*(?:\bnot\s+)?\bin\s*\(([^()]*)\)|\barray\s*\[([^\]]*)\]/gi;

/** webhook_messages.status shares 'pending' and 'failed' with the batch states: its lists are not batch states. */
const NOT_A_STATE = new Set(['status']);

/** Each list in `code` that names a batch state as a quoted literal, with its line. */
function literalStateLists(code: string): string[] {
  const withoutComments = code.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/\/\/[^\n]*/g, '');
  const found: string[] = [];
  for (const match of withoutComments.matchAll(LIST)) {
    const [text, left, inItems, arrayItems] = match;
    const items = inItems ?? arrayItems ?? '';
    if (left !== undefined && NOT_A_STATE.has(left.split('.').pop() ?? '')) continue;
    if (!QUOTED_STATE.test(items)) continue;
    const line = withoutComments.slice(0, match.index).split('\n').length;
    found.push(`${line}: ${text.trim()}`);
  }
  return found;
}

function tsFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFilesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('batch-state lists in src/mapping', () => {
  it('finds a quoted state list however it is written, and not a typed one', () => {
    expect(literalStateLists("sql`where b.state in ('created', 'synced')`")).toHaveLength(1);
    expect(literalStateLists("sql.raw(`(state not in ('needs_review'))`)")).toHaveLength(1);
    expect(literalStateLists("sql`state = any(array['pending', 'failed']::batch_state[])`")).toHaveLength(1);
    expect(literalStateLists(`sql\`where b.state in (\${stateList(RETRYABLE_STATES)})\``)).toEqual([]);
    expect(literalStateLists("sql`where status in ('pending', 'failed')`")).toEqual([]);
    expect(literalStateLists("// state in ('created')\nconst x = 1;")).toEqual([]);
  });

  it('are written with stateList over a typed constant, never as quoted literals', () => {
    const files = tsFilesUnder(join(root, 'src/mapping'));
    expect(files.length).toBeGreaterThan(20);
    const offenders = files.flatMap((file) => literalStateLists(readFileSync(file, 'utf8')).map((hit) => `${relative(root, file)}:${hit}`));
    expect(offenders, 'write the list as `stateList(...)` (src/mapping/sql.ts) over a `readonly BatchState[]`').toEqual([]);
  });
});
