import { describe, expect, it } from 'vitest';
import { findDoubleCasts, isExempt } from '../../scripts/check-casts.ts';

const lines = (...text: string[]) => `${text.join('\n')}\n`;

describe('findDoubleCasts', () => {
  it('passes single casts, casts to other types and `unknown` used as a type', () => {
    const text = lines(
      'const a = value as Record<string, number>;',
      'const b = value as unknown;',
      'const c = <string>value;',
      'function f(x: unknown): unknown { return x as string as unknown; }',
      'const d = value satisfies unknown as string;',
    );
    expect(findDoubleCasts('ok.ts', text)).toEqual([]);
  });

  it('flags `as unknown as` with its line and its text as written', () => {
    const text = lines('// a comment', 'const a = 1;', 'export const b = (a as unknown as { n: number }).n;');
    expect(findDoubleCasts('one.ts', text)).toEqual([{ file: 'one.ts', line: 3, text: 'a as unknown as { n: number }' }]);
  });

  it('flags the parenthesised, the angle-bracket and the multi-line spellings, each on its first line', () => {
    const text = lines(
      'const a = (value as unknown) as string;',
      'const b = <string>(<unknown>value);',
      'const c = <string>(value as unknown);',
      'const d = value as unknown as {',
      '  n: number;',
      '};',
    );
    expect(findDoubleCasts('kinds.ts', text).map((c) => [c.line, c.text])).toEqual([
      [1, '(value as unknown) as string'],
      [2, '<string>(<unknown>value)'],
      [3, '<string>(value as unknown)'],
      [4, 'value as unknown as {'],
    ]);
  });

  it('ignores the phrase in comments and strings', () => {
    const text = lines('// no `x as unknown as T` here', 'const s = "as unknown as";', '/* value as unknown as string */');
    expect(findDoubleCasts('prose.ts', text)).toEqual([]);
  });
});

describe('isExempt', () => {
  it('exempts the sandbox folder only, at the top of the checked directory', () => {
    expect(isExempt('sandbox/server.ts')).toBe(true);
    expect(isExempt('sandbox')).toBe(true);
    expect(isExempt('logging/logger.ts')).toBe(false);
    expect(isExempt('http/sandbox/x.ts')).toBe(false);
    expect(isExempt('sandboxes/x.ts')).toBe(false);
  });
});
