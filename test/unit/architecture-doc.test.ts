// ARCHITECTURE.md is the map a new maintainer changes the code by: it must keep naming every folder
// of src/ and only files that exist, and stay short enough to be read in one go.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const doc = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
const { LAYERS } = createRequire(import.meta.url)('../../scripts/layers.cjs') as { LAYERS: string[] };

/** The text between two headings (or to the end), one line. */
const section = (from: string, to?: string) => doc.slice(doc.indexOf(from), to === undefined ? undefined : doc.indexOf(to)).replace(/\s+/g, ' ');

/** The newest migration that (re)defines the outbox trigger's function, and the message types it writes. */
function outboxTrigger(): { file: string; types: string[] } {
  const dir = join(root, 'migrations');
  const file = readdirSync(dir)
    .filter((name) => /^\d{4}_.*\.sql$/.test(name))
    .sort()
    .filter((name) => readFileSync(join(dir, name), 'utf8').includes('FUNCTION "webhook_message_of_batch"'))
    .at(-1)!;
  const sql = readFileSync(join(dir, file), 'utf8');
  const body = sql.slice(sql.indexOf('FUNCTION "webhook_message_of_batch"'));
  return { file, types: [...body.matchAll(/kind := '(batch\.[a-z_]+)'/g)].map((m) => m[1]!).sort() };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)]));
}

function foldersOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      return [relative(root, path), ...foldersOf(path)];
    });
}

describe('ARCHITECTURE.md', () => {
  it('carries no unresolved merge conflict', () => {
    expect(doc.split('\n').filter((line) => /^(<{7}|={7}|>{7})( |$)/.test(line))).toEqual([]);
  });

  it('names every folder of src/ in its code map', () => {
    const code = doc.slice(doc.indexOf('## Code map'), doc.indexOf('## One batch'));
    const missing = foldersOf(join(root, 'src')).filter((folder) => {
      const [, top, nested] = folder.split('/');
      // A nested folder may be named inside its parent's entry (`outbox/` under src/mapping/).
      return nested === undefined ? !code.includes(`\`${folder}/\``) : !code.includes(`${top}/${nested}`) && !code.includes(`\`${nested}/\``);
    });
    expect(missing).toEqual([]);
  });

  it('states the layer order the lint rules enforce', () => {
    const stated = /Bottom to top, each folder imports only folders before it: (.*?); then index\.ts/.exec(section('## Code map', '## One batch'))?.[1];
    expect(stated?.split(', ').map((entry) => entry.replace(/ \(.*\)$/, ''))).toEqual(LAYERS);
  });

  it('names every message the outbox trigger writes, and the migration that last defines it', () => {
    const { file, types } = outboxTrigger();
    const path = section('## One batch', '## Invariants');
    const step7 = path.slice(path.indexOf(' 7. '));
    expect([...new Set(step7.match(/batch\.[a-z_]+/g))].sort()).toEqual(types);
    expect(section('## Code map', '## One batch')).toContain(`last replaced in migrations/${file}`);
  });

  it('says how to add a class field and a remote operation, a field in at most 5 source files', () => {
    const field = section('## How to add a class field', '## How to add a remote operation');
    const needed = field.slice(0, field.indexOf(' 3. '));
    expect(new Set(needed.match(/\b(?:src|test)\/[\w./-]+\.ts\b/g)).size).toBeGreaterThan(0);
    expect(new Set(needed.match(/\bsrc\/[\w./-]+\.ts\b/g)).size).toBeLessThanOrEqual(5);
    expect(section('## How to add a remote operation')).toContain('src/classroom/operations.ts');
  });

  it('names only source, test and script files that exist', () => {
    const named = [...new Set(doc.match(/\b(?:src|test|scripts|bench)\/[\w./-]+\.(?:ts|mjs|cjs)\b/g) ?? [])];
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((path) => !existsSync(join(root, path)))).toEqual([]);
  });

  it('names by bare name only files that exist somewhere in the repository', () => {
    const files = new Set(
      ['src', 'test', 'scripts', 'bench'].flatMap((dir) => filesUnder(join(root, dir))).map((path) => path.slice(path.lastIndexOf('/') + 1)),
    );
    files.add('.dependency-cruiser.cjs');
    const bare = [...new Set(doc.match(/(?<![\w/.-])[\w.-]+\.(?:ts|mjs|cjs)\b/g) ?? [])];
    expect(bare.length).toBeGreaterThan(40);
    expect(bare.filter((name) => !files.has(name))).toEqual([]);
  });

  it('cites as proof only tests that exist', () => {
    const tests = new Set(filesUnder(join(root, 'test')).map((path) => path.slice(path.lastIndexOf('/') + 1)));
    const cited = [...new Set(doc.match(/[\w.-]+\.test\.ts\b/g) ?? [])].map((name) => name.replace(/^.*\//, ''));
    expect(cited.length).toBeGreaterThan(10);
    expect(cited.filter((name) => !tests.has(name))).toEqual([]);
  });

  it('walks one batch from event to synced through files in order, and stays under 280 lines', () => {
    const path = doc.slice(doc.indexOf('## One batch'), doc.indexOf('## Invariants'));
    const steps = [
      'src/intake/publish.ts',
      'src/sync/sync-worker.ts',
      'src/sync/processor.ts',
      'src/sync/machine.ts',
      'src/classroom/client.ts',
      'src/sync/run-end.ts',
    ];
    const at = steps.map((step) => path.indexOf(step));
    expect(at.every((index) => index >= 0)).toBe(true);
    expect(at).toEqual([...at].sort((a, b) => a - b));
    expect(doc.trimEnd().split('\n').length).toBeLessThan(280);
  });
});
