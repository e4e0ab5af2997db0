import { describe, expect, it } from 'vitest';
import { findOversize } from '../../scripts/check-size.ts';

const limits = { fileLines: 20, functionLines: 5 };
const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');

describe('findOversize', () => {
  it('passes a small file of short functions', () => {
    expect(findOversize('ok.ts', `export function short() {\n${body(3)}\n}\n`, limits)).toEqual([]);
  });

  it('flags a function over the limit with its first line and length, counting from its first line to its last', () => {
    const text = `// a comment\n\n/** docs are not counted */\nexport function long() {\n${body(4)}\n}\n`;
    expect(findOversize('long.ts', text, limits)).toEqual([{ kind: 'function', file: 'long.ts', line: 4, lines: 6, name: 'long' }]);
    expect(findOversize('edge.ts', `function edge() {\n${body(3)}\n}\n`, limits)).toEqual([]);
  });

  it('measures methods, arrow functions and function expressions, nested ones each on their own', () => {
    const text = [
      'class Store {',
      '  save() {',
      body(6),
      '  }',
      '}',
      'const handler = async () => {',
      '  on(() => {',
      body(5),
      '  });',
      '};',
      'const expr = function () {',
      body(5),
      '};',
    ].join('\n');
    const found = findOversize('kinds.ts', `${text}\n`, { ...limits, fileLines: 100 }).map((o) => (o.kind === 'function' ? [o.name, o.line, o.lines] : o.kind));
    expect(found).toEqual([
      ['save', 2, 8],
      ['handler', 11, 9],
      ['(callback of on)', 12, 7],
      ['expr', 20, 7],
    ]);
  });

  it('flags a file over the limit, not counting the final newline as a line', () => {
    const lines = (n: number) => `${Array.from({ length: n }, (_, i) => `export const c${i} = ${i};`).join('\n')}\n`;
    expect(findOversize('twenty.ts', lines(20), limits)).toEqual([]);
    expect(findOversize('big.ts', lines(21), limits)).toEqual([{ kind: 'file', file: 'big.ts', line: 1, lines: 21 }]);
  });
});
