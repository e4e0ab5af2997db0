import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_CLASS_NAME, cutAt, renderClassName } from '../../src/sync/names.ts';

/** An unpaired UTF-16 surrogate: what a cut through a pair leaves (the remote would store U+FFFD or refuse it). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe('renderClassName', () => {
  const batch = { name: 'Algebra I', batchId: 'B-1', subject: 'Maths' };

  it('fills the template', () => {
    expect(renderClassName('{name}', batch)).toBe('Algebra I');
    expect(renderClassName('{name} · {batchId} ({subject})', batch)).toBe('Algebra I · B-1 (Maths)');
  });

  it('inserts values as written: "$" sequences and placeholders inside a value stay as they are', () => {
    expect(renderClassName('{name}', { ...batch, name: 'Pricing $$ and $& and $1' })).toBe('Pricing $$ and $& and $1');
    expect(renderClassName('{name} · {batchId}', { ...batch, name: 'Room {batchId}' })).toBe('Room {batchId} · B-1');
  });

  it('a name of exactly the limit is sent whole', () => {
    const name = 'n'.repeat(MAX_CLASS_NAME);
    expect(renderClassName('{name}', { ...batch, name })).toBe(name);
  });

  it('too long, it cuts the {name} part and keeps {batchId} whole', () => {
    const batchId = 'B-2026-000123';
    const name = `${'Advanced algebra '.repeat(20)}end`;
    const sent = renderClassName('{name} ({batchId})', { ...batch, name, batchId });
    expect(sent.length).toBeLessThanOrEqual(MAX_CLASS_NAME);
    expect(sent.endsWith(` (${batchId})`)).toBe(true);
    expect(name.startsWith(sent.slice(0, -` (${batchId})`.length))).toBe(true);
    // Nothing is wasted: the cut name ends in a word, not a trailing space before the id.
    expect(sent).not.toMatch(/ {2}\(/);
  });

  it('never ends inside an astral character at the cut point', () => {
    // "😀" is two UTF-16 code units: at 199 + 2 it would be split by a plain slice(0, 200).
    const name = `${'a'.repeat(199)}😀 and more`;
    const sent = renderClassName('{name}', { ...batch, name });
    expect(sent).toBe('a'.repeat(199));
    expect(sent).not.toMatch(LONE_SURROGATE);
    const withId = renderClassName('{name} · {batchId}', { ...batch, name: `${'b'.repeat(193)}😀😀` });
    expect(withId).toBe(`${'b'.repeat(193)} · B-1`);
  });

  it('keeps an emoji and its modifier together', () => {
    // 👍🏽 is a thumb (2 units) and a skin tone (2 units): a cut between them would change the emoji.
    const name = `${'a'.repeat(197)}👍🏽 tail`;
    expect(renderClassName('{name}', { ...batch, name })).toBe('a'.repeat(197));
    expect(renderClassName('{name}', { ...batch, name: `${'a'.repeat(196)}👍🏽 tail` })).toBe(`${'a'.repeat(196)}👍🏽`);
  });

  it('when the id alone does not leave room for the name, the whole is cut at its end, as before', () => {
    const batchId = `B${'9'.repeat(199)}`;
    const sent = renderClassName('{name} · {batchId}', { ...batch, batchId });
    expect(sent).toBe(`Algebra I · ${batchId}`.slice(0, MAX_CLASS_NAME));
  });

  it('property: at most the limit, whole characters, the batch id whole whenever the rest of the template fits', () => {
    const templates = ['{name}', '{name} · {batchId}', '{name} ({batchId})', '{batchId}: {name} [{subject}]', '{name} {name} {batchId}'];
    // size 'max': lengths spread up to the maximum, so about half the names need a cut.
    const text = (max: number) => fc.string({ unit: 'grapheme', minLength: 1, maxLength: max, size: 'max' });
    fc.assert(
      fc.property(fc.constantFrom(...templates), text(260), text(40), text(20), (template, name, batchId, subject) => {
        const values = { name, batchId, subject };
        const sent = renderClassName(template, values);
        expect(sent.length).toBeLessThanOrEqual(MAX_CLASS_NAME);
        expect(sent).not.toMatch(LONE_SURROGATE);
        // The rest of the template (the id, the subject, the text around them) leaves room for a name.
        const rest = template.replace(/\{(name|batchId|subject)\}/g, (_, f: keyof typeof values) => (f === 'name' ? '' : values[f])).length;
        const fits = MAX_CLASS_NAME - rest >= template.split('{name}').length - 1;
        if (fits && template.includes('{batchId}')) expect(sent).toContain(batchId.trim());
        const whole = renderClassName(template, values, Number.MAX_SAFE_INTEGER);
        if (whole.length <= MAX_CLASS_NAME) expect(sent).toBe(whole);
      }),
    );
  });
});

describe('cutAt', () => {
  it('cuts between whole user-perceived characters, between code points when not even one fits', () => {
    const zalgo = `e${'\u0301'.repeat(300)}`;
    expect(cutAt(zalgo, 10)).toBe(zalgo.slice(0, 10));
    expect(cutAt(`${'😀'.repeat(3)}`, 5)).toBe('😀😀');
    expect(cutAt(`a${'\u0301'.repeat(5)}😀`, 7)).toBe(`a${'\u0301'.repeat(5)}`);
  });
});
