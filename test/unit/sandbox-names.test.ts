import { describe, expect, it } from 'vitest';
import { faultConfigSchema } from '../../src/sandbox/faults.ts';
import { rewriteName } from '../../src/sandbox/names.ts';

describe('sandbox name rewriting', () => {
  it('keeps the name byte for byte without a rule, or with an empty one', () => {
    const name = '  Algebra\u00a0 1 ';
    expect(rewriteName(name, undefined)).toBe(name);
    expect(rewriteName(name, {})).toBe(name);
  });

  it('normalize: NFC, any whitespace run becomes one space, trimmed', () => {
    const decomposed = 'Cafe\u0301'; // "e" + combining acute accent
    expect(rewriteName(`\t ${decomposed} \n\u00a0 Maths\u3000 1  `, { normalize: true })).toBe('Caf\u00e9 Maths 1');
  });

  it('case: lower or upper', () => {
    expect(rewriteName('Algebra ÉTÉ', { case: 'lower' })).toBe('algebra été');
    expect(rewriteName('Algebra été', { case: 'upper' })).toBe('ALGEBRA ÉTÉ');
  });

  it('maxLength: at most N code points, trailing whitespace trimmed', () => {
    expect(rewriteName('Algebra 1', { maxLength: 20 })).toBe('Algebra 1');
    expect(rewriteName('Algebra 1', { maxLength: 7 })).toBe('Algebra');
    expect(rewriteName('Algebra 1', { maxLength: 8 })).toBe('Algebra'); // "Algebra " loses its space
  });

  it('maxLength counts code points and never splits a surrogate pair', () => {
    const name = '𝔸𝔹ℂ𝔻'; // three astral characters (two UTF-16 units each) and one BMP one
    expect(rewriteName(name, { maxLength: 2 })).toBe('𝔸𝔹');
    expect(rewriteName(name, { maxLength: 3 })).toBe('𝔸𝔹ℂ');
    expect(rewriteName(name, { maxLength: 4 })).toBe(name);
    const cut = rewriteName('😀😀😀', { maxLength: 2, ellipsis: true });
    expect(cut).toBe('😀…');
    expect(() => encodeURIComponent(cut)).not.toThrow(); // throws on a lone surrogate
  });

  it('ellipsis: a cut name ends in "…" within maxLength; an uncut one is left alone', () => {
    expect(rewriteName('Algebra 1 for beginners', { maxLength: 9, ellipsis: true })).toBe('Algebra…');
    expect(rewriteName('Trigonometry', { maxLength: 10, ellipsis: true })).toBe('Trigonome…'); // 10 code points
    expect(rewriteName('Algebra 1', { maxLength: 9, ellipsis: true })).toBe('Algebra 1');
    expect(rewriteName('Algebra 1', { maxLength: 1, ellipsis: true })).toBe('…');
  });

  it('applies normalize, then case, then the cut', () => {
    // Normalizing first means the collapsed spaces do not use up the length.
    expect(rewriteName('  big    Class   name  ', { normalize: true, case: 'upper', maxLength: 9 })).toBe('BIG CLASS');
    // Casing before cutting: "ß" upper-cases to "SS", and the cut counts the result.
    expect(rewriteName('straße', { case: 'upper', maxLength: 6 })).toBe('STRASS');
  });

  it('the fault config validates a rule, naming the field', () => {
    const problem = (nameRewrite: unknown) => {
      const result = faultConfigSchema.safeParse({ nameRewrite });
      return result.success ? undefined : `${result.error.issues[0]?.path.join('.')}: ${result.error.issues[0]?.message}`;
    };
    expect(problem({ normalize: true, case: 'lower', maxLength: 40, ellipsis: true })).toBeUndefined();
    expect(problem({ case: 'title' })).toBe('nameRewrite.case: must be one of lower, upper');
    expect(problem({ maxLength: 0 })).toBe('nameRewrite.maxLength: must be at least 1');
    expect(problem({ maxLength: 2.5 })).toBe('nameRewrite.maxLength: must be an integer');
    expect(problem({ ellipsis: true })).toBe('nameRewrite.ellipsis: needs maxLength');
    expect(problem({ trim: true })).toMatch(/^nameRewrite: /);
  });
});
