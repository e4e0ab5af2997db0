// The name-matching rule shared by sync and reconciliation: examples, then the property the whole
// product rests on — whatever the remote does to a name (of the rewritings it is known to make), a
// listing that holds the rewritten name never licenses a second add-class.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InstituteListing } from '../../src/classroom/schemas.ts';
import { matchName, normalizeName } from '../../src/sync/matching.ts';
import { type ClaimsOnCandidates, decideResolution, findCandidates } from '../../src/sync/resolve.ts';
import { depth } from '../helpers/depth.ts';

const RULES = { minCut: 16 };
const NO_CLAIMS: ClaimsOnCandidates = { mappedElsewhere: new Set<string>(), otherClaimants: [] };
const listingOf = (...names: string[]): InstituteListing => ({
  classes: names.map((name, i) => ({ _id: `c${String(i).padStart(23, '0')}`, name })),
  pendingClasses: [],
  hiddenClasses: [],
});
const decide = (ours: string, listing: InstituteListing, claims = NO_CLAIMS) => decideResolution(ours, findCandidates(listing, ours, RULES), claims, RULES);

describe('normalizeName', () => {
  it('is NFC, case folded, whitespace collapsed and trimmed', () => {
    expect(normalizeName('  Grade\t10\u00a0 Physics  ')).toBe('grade 10 physics');
    expect(normalizeName('Cafe\u0301')).toBe(normalizeName('CAFÉ'));
    expect(normalizeName('Straße')).toBe(normalizeName('STRASSE'));
    expect(normalizeName('ΟΔΟΣ')).toBe(normalizeName('οδος'));
  });
});

describe('matchName', () => {
  it('same: equal after normalising, whatever the case, spacing or Unicode form', () => {
    expect(matchName('Algebra  I', ' algebra i', RULES)).toBe('same');
    expect(matchName('Café Physics', 'CAFE\u0301 PHYSICS', RULES)).toBe('same');
  });

  it('cut: a long enough prefix of ours, with or without a trailing ellipsis', () => {
    const ours = 'Advanced Quantum Mechanics for Engineers';
    expect(matchName(ours, 'advanced quantum mech', RULES)).toBe('cut');
    expect(matchName(ours, 'Advanced Quantum Mech…', RULES)).toBe('cut');
    expect(matchName(ours, 'Advanced Quantum Mech...', RULES)).toBe('cut');
  });

  it('similar: a short prefix, or equal once accents and punctuation are ignored', () => {
    expect(matchName('Algebra II', 'Algebra I', RULES)).toBe('similar');
    expect(matchName('Élan – Section A', 'Elan Section A', RULES)).toBe('similar');
  });

  it('no match: a longer name, or a different one', () => {
    expect(matchName('Algebra I', 'Algebra II', RULES)).toBeUndefined();
    expect(matchName('Algebra I', 'Geometry', RULES)).toBeUndefined();
    expect(matchName('Algebra I', '…', RULES)).toBeUndefined();
  });
});

describe('decideResolution', () => {
  it('creates only when nothing plausible is listed', () => {
    expect(decide('Organic Chemistry', listingOf('Geometry', 'Organic Chemistry II'))).toEqual({ decision: 'create' });
  });

  it('adopts the one strong candidate, keeping the name the remote shows', () => {
    const resolution = decide('Organic Chemistry — evening batch', listingOf('Geometry', 'organic chemistry — eveni'));
    expect(resolution).toMatchObject({ decision: 'adopt', remoteName: 'organic chemistry — eveni' });
  });

  it('sends a merely similar candidate to review with the evidence, never creating', () => {
    const resolution = decide('Algebra II', listingOf('Algebra I'));
    expect(resolution.decision).toBe('review');
    if (resolution.decision !== 'review') return;
    expect(resolution.reason).toMatch(/resembles/);
    expect(resolution.evidence.matches).toMatchObject([{ name: 'Algebra I', match: 'similar' }]);
  });

  it('reviews when another unmapped batch that sent an add-class could own the only candidate', () => {
    const claims = { mappedElsewhere: new Set<string>(), otherClaimants: ['Physics lab, group A and B'] };
    const resolution = decide('Physics lab, group A', listingOf('physics lab, group a'), claims);
    expect(resolution).toMatchObject({ decision: 'review', evidence: { otherClaimants: ['Physics lab, group A and B'] } });
  });

  it('ignores candidates mapped to other batches', () => {
    const listing = listingOf('Physics');
    const mapped = { mappedElsewhere: new Set([listing.classes[0]!._id!]), otherClaimants: [] };
    expect(decide('Physics', listing, mapped)).toEqual({ decision: 'create' });
  });
});

// ---- the property -------------------------------------------------------------------------------

const pieces = fc.constantFrom(
  'a',
  'B',
  'z',
  'Q',
  '0',
  '7',
  ' ',
  '  ',
  '\t',
  '\u00a0',
  '\u2003',
  '\n',
  'é',
  'e\u0301',
  'É',
  'ß',
  'SS',
  'Σ',
  'ς',
  'σ',
  'İ',
  'ı',
  'ǰ',
  'ﬁ',
  'Å',
  'A\u030a',
  '😀',
  '𝔸',
  '-',
  '.',
  '…',
  '·',
  '(',
  ')',
  '/',
  '#',
  'ş',
  'Ω',
  'ω',
  'Ǆ',
);
const names = fc
  .array(pieces, { minLength: 1, maxLength: 40 })
  .map((parts) => parts.join(''))
  .filter((n) => normalizeName(n) !== '');

type Cut = { t: 'cut'; at: number; unit: 'codePoint' | 'codeUnit'; mark: '' | '…' | '...' };
type Step = { t: 'trim' | 'collapse' | 'lower' | 'upper' | 'nfc' | 'nfd' } | Cut;
const simple = fc.constantFrom<Step>({ t: 'trim' }, { t: 'collapse' }, { t: 'lower' }, { t: 'upper' }, { t: 'nfc' }, { t: 'nfd' });
const cut = fc.record({
  t: fc.constant('cut' as const),
  at: fc.integer({ min: 1, max: 60 }),
  unit: fc.constantFrom('codePoint' as const, 'codeUnit' as const),
  mark: fc.constantFrom('' as const, '…' as const, '...' as const),
});
/** What a remote does to a name: any normalising steps, at most one cut (by code point or code unit, maybe marked), more normalising. */
const steps = fc
  .tuple(fc.array(simple, { maxLength: 3 }), fc.option(cut, { nil: undefined }), fc.array(simple, { maxLength: 3 }))
  .map(([before, shortened, after]): Step[] => [...before, ...(shortened ? [shortened] : []), ...after]);

function rewrite(name: string, plan: readonly Step[]): string {
  let out = name;
  for (const step of plan) {
    if (step.t === 'trim') out = out.trim();
    else if (step.t === 'collapse') out = out.replace(/\s+/gu, ' ');
    else if (step.t === 'lower') out = out.toLowerCase();
    else if (step.t === 'upper') out = out.toUpperCase();
    else if (step.t === 'nfc') out = out.normalize('NFC');
    else if (step.t === 'nfd') out = out.normalize('NFD');
    else if (step.t === 'cut') {
      const cut = step.unit === 'codePoint' ? [...out].slice(0, step.at).join('') : out.slice(0, step.at);
      if (cut.length < out.length) out = cut + step.mark;
    }
  }
  return out;
}

describe('property: a listed rewriting of our name never licenses a second add-class', () => {
  it('holds over random names, rewritings and neighbours', () => {
    fc.assert(
      fc.property(names, steps, fc.array(names, { maxLength: 6 }), (ours, plan, others) => {
        const kept = rewrite(ours, plan);
        // A remote keeps some name: a rewriting that leaves nothing is not one it can make.
        fc.pre(normalizeName(kept.replace(/(…|\.\.\.)$/u, '')) !== '');
        expect(matchName(ours, kept, RULES)).toBeDefined();
        const listing = listingOf(...others, kept);
        expect(decide(ours, listing).decision).not.toBe('create');
      }),
      { numRuns: depth(1_000, 5_000) },
    );
  });

  it('adopts only one strong candidate: a listing of unrelated names and one rewriting adopts that one or reviews', () => {
    fc.assert(
      fc.property(names, steps, (ours, plan) => {
        const kept = rewrite(ours, plan);
        fc.pre(normalizeName(kept.replace(/(…|\.\.\.)$/u, '')) !== '');
        const listing = listingOf('zzzz unrelated', kept);
        const resolution = decide(ours, listing);
        if (resolution.decision === 'adopt') expect(resolution.classId).toBe(listing.classes[1]!._id);
      }),
      { numRuns: depth(500, 2_000) },
    );
  });
});
