// How a batch's class name is compared with a name the remote lists. The remote may not keep a name
// byte for byte (it may trim, collapse whitespace, change case, normalise Unicode or shorten it), so
// after an add-class whose answer was lost, "no listed name equals ours" proves nothing. This module
// is the one rule, pure, shared by a sync run and by reconciliation.
//
// The normalisation (documented in the README, "Name matching"): Unicode NFC, case folded (upper-
// then lower-casing, so "ß" and "SS" agree, with Greek final sigma folded to σ), every run of
// whitespace collapsed to one space, trimmed. On top of it, three ways a listed name can match ours:
//   same     equal after normalising
//   cut      a prefix of ours after normalising (a trailing "…", "..." or U+FFFD dropped first), of
//            at least `minCut` characters: the remote shortened our name
//   similar  a shorter prefix than that, or equal (or a prefix) once accents, punctuation and
//            compatibility forms are also ignored: not a rewriting we can tell from a coincidence
//            ("Algebra I" is a prefix of "Algebra II"), but too close to rule out
// `same` and `cut` are strong enough to adopt; `similar` only stops a create (an operator decides).
import type { NameMatch } from '../mapping/index.ts';

export type { NameMatch };

export interface NameRules {
  /** Shortest listed name (in characters, after normalising) accepted as a cut of ours. */
  minCut: number;
}

export const DEFAULT_MIN_CUT = 16;

/** The documented normalisation: NFC, case folded, whitespace collapsed, trimmed. */
export function normalizeName(name: string): string {
  return foldCase(name.normalize('NFC')).replace(/\s+/gu, ' ').trim();
}

/**
 * Compared in NFD: a remote that cuts a decomposed name between a letter and its accent still
 * leaves a prefix of ours. Equality in NFD is equality in NFC (canonical equivalence).
 */
export const comparable = (name: string): string => normalizeName(name).normalize('NFD');

/**
 * A trailing ellipsis or replacement character may be what a cut left behind rather than part of
 * the name: both readings are tried (one mark only: a cut appends one).
 */
export function cutForms(name: string): string[] {
  const stripped = name.replace(/(?:…|\.\.\.|\uFFFD)$/u, '').trimEnd();
  return stripped === name ? [name] : [name, stripped];
}

/** Looser still: compatibility forms, no accents, letters and digits only. */
export function skeleton(name: string): string {
  return foldCase(name.normalize('NFKD'))
    .normalize('NFKD')
    .replace(/[^\p{L}\p{N}]/gu, '');
}

function foldCase(text: string): string {
  return text.toUpperCase().toLowerCase().replace(/ς/gu, 'σ').normalize('NFC');
}

const characters = (text: string): number => [...text.normalize('NFC')].length;

/** How `listed` (a name the remote shows) matches `ours` (the name we sent), if at all. */
export function matchName(ours: string, listed: string, rules: NameRules): NameMatch | undefined {
  const mine = comparable(ours);
  const forms = cutForms(comparable(listed));
  // Equal, or equal once the mark a cut may have appended is dropped (the cut took nothing away).
  if (forms.includes(mine)) return 'same';
  const cut = forms.find((form) => isPrefix(mine, form));
  if (cut !== undefined) return characters(cut) >= rules.minCut ? 'cut' : 'similar';
  const mineLoose = skeleton(ours);
  const theirsLoose = skeleton(listed);
  if (theirsLoose !== '' && (theirsLoose === mineLoose || isPrefix(mineLoose, theirsLoose))) return 'similar';
  return undefined;
}

function isPrefix(whole: string, part: string): boolean {
  return part.length > 0 && part.length < whole.length && whole.startsWith(part);
}

/**
 * The keys an index of listed names needs to find every candidate of a name without comparing it
 * with each listed name: a listed name can only match ours if one of its `cut` keys is ours'
 * `comparable` form or a prefix of it, or its `loose` key is ours' `skeleton` or a prefix of it.
 */
export function listedKeys(listed: string): { cut: string[]; loose: string } {
  return { cut: cutForms(comparable(listed)), loose: skeleton(listed) };
}

/** Strong enough to adopt (given it is the only candidate and nobody else can claim it). */
export const isStrong = (match: NameMatch): boolean => match !== 'similar';
