// Parsers for flag values. Each refuses a bad value with commander's InvalidArgumentError, so the
// message names the flag ("error: option '--limit <n>' argument '-1' is invalid. …") and the exit code is 1.
import { InvalidArgumentError } from 'commander';
import { parseDuration } from '../config/duration.ts';

/** A decimal integer, as parseInt reads it (what `--count` and `--port` always accepted). */
export function decimal(value: string): number {
  return Number.parseInt(value, 10);
}

/** A whole number written as such ("07" or "1.5" are refused), at least 0. */
export function nonNegative(value: string): number {
  const n = Number.parseInt(value, 10);
  if (!Number.isInteger(n) || n < 0 || String(n) !== value.trim()) throw new InvalidArgumentError('must be a whole number ≥ 0');
  return n;
}

export function integer(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };
}

export function milliseconds(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError('must be milliseconds or a duration such as 500ms, 2s, 10m');
  return ms;
}

export function probability(value: string): number {
  const p = Number(value);
  if (value.trim() === '' || !Number.isFinite(p) || p < 0 || p > 1) throw new InvalidArgumentError('must be a probability from 0 to 1');
  return p;
}

export function oneOf<T extends string>(choices: readonly T[]) {
  return (value: string): T => {
    if (!(choices as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${choices.join(', ')}`);
    return value as T;
  };
}

/** For repeatable flags: every value given, in order. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
