// The sandbox's flag values that are checked while the command line is parsed. Light on purpose:
// the rest of the flags' translation (sandbox-flags.ts) needs the sandbox's schemas, and is loaded
// only when `classroom-sync sandbox` runs.
import { InvalidArgumentError } from 'commander';
import { FAULT_KINDS, OPERATIONS } from '../sandbox/vocabulary.ts';
import { probability } from './parse.ts';

export function parseFaultSpec(spec: string) {
  const match = /^(?:(\w+):)?(\w+)=([\d.]+)$/.exec(spec);
  const [, operation, kind, p] = match ?? [];
  if (!kind || !(FAULT_KINDS as readonly string[]).includes(kind)) {
    throw new InvalidArgumentError(`--fault ${spec}: expected [operation:]kind=p with kind one of ${FAULT_KINDS.join(', ')}`);
  }
  if (operation !== undefined && !(OPERATIONS as readonly string[]).includes(operation)) {
    throw new InvalidArgumentError(`--fault ${spec}: operation must be one of ${OPERATIONS.join(', ')}`);
  }
  return {
    operation: operation as (typeof OPERATIONS)[number] | undefined,
    kind: kind as (typeof FAULT_KINDS)[number],
    p: probability(p ?? ''),
  };
}

/** 401 (a revoked key) or 403 (a suspended one). */
export function refusalStatus(value: string): number {
  if (value !== '401' && value !== '403') throw new InvalidArgumentError('must be 401 or 403');
  return Number(value);
}
