import { describe, expect, it } from 'vitest';
import { renderClassName } from '../../src/sync/names.ts';

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
});
