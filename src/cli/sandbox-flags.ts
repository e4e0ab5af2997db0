// The `classroom-sync sandbox` flags and their translation into a FaultConfig. Every bad value
// is reported naming the flag that carried it, not the config field it became.
import { InvalidArgumentError } from 'commander';
import { type FaultConfig, type FaultRates, type SandboxOperation, faultConfigSchema, mixedFaultRates } from '../sandbox/faults.ts';
import { parseFaultSpec } from './fault-spec.ts';

export interface SandboxFlags {
  port: number;
  host: string;
  seed?: number;
  latency?: number;
  latencyJitter?: number;
  failRate?: number;
  lostResponseRate?: number;
  fault: string[];
  rateLimit?: number;
  rateLimitWindow?: number;
  retryAfter?: number;
  hang?: number;
  listingDelay?: number;
  listingIds: boolean;
  normalizeNames?: boolean;
  /** 'lower' or 'upper'; anything else is refused naming --name-case. */
  nameCase?: string;
  cutNames?: number;
  cutEllipsis?: boolean;
  readLag?: number;
  readLagMin?: number;
  refuseKey?: boolean;
  /** 401 or 403. */
  refuseKeyStatus?: number;
  refuseKeyFor?: number;
  /** Refuse only these accounts' keys (names from CLASSROOM_ACCOUNTS_FILE); empty = every key. */
  refuseKeyAccount?: string[];
  institute: string[];
}

/** Config field (dotted path) → the flag that sets it, so validation errors name the flag. */
const FLAG_OF: Record<string, string> = {
  latencyMs: '--latency',
  latencyJitterMs: '--latency-jitter',
  rateLimitPerMinute: '--rate-limit',
  rateLimitWindowMs: '--rate-limit-window',
  retryAfterSeconds: '--retry-after',
  hangMs: '--hang',
  listingDelayMs: '--listing-delay',
  readLagMs: '--read-lag',
  readLagMinMs: '--read-lag-min',
  'nameRewrite.normalize': '--normalize-names',
  'nameRewrite.case': '--name-case',
  'nameRewrite.maxLength': '--cut-names',
  'nameRewrite.ellipsis': '--cut-ellipsis',
  'refuseKey.status': '--refuse-key-status',
  'refuseKey.forMs': '--refuse-key-for',
  'refuseKey.accounts': '--refuse-key-account',
};

type Flags = Omit<SandboxFlags, 'port' | 'host' | 'institute'>;

/** Flags → a validated FaultConfig. Per-operation `--fault`s are layered over the global rates. */
export function faultConfigFromFlags(flags: Flags): FaultConfig {
  requireCompanion(flags.cutEllipsis === true, '--cut-ellipsis', flags.cutNames !== undefined, '--cut-names <n>');
  requireCompanion(flags.readLagMin !== undefined, '--read-lag-min', flags.readLag !== undefined, '--read-lag <ms>');
  requireCompanion(flags.refuseKeyStatus !== undefined, '--refuse-key-status', flags.refuseKey === true, '--refuse-key');
  requireCompanion(flags.refuseKeyFor !== undefined, '--refuse-key-for', flags.refuseKey === true, '--refuse-key');
  const accounts = flags.refuseKeyAccount?.length ? flags.refuseKeyAccount : undefined;
  requireCompanion(accounts !== undefined, '--refuse-key-account', flags.refuseKey === true, '--refuse-key');
  const config = faultConfigSchema.safeParse({
    latencyMs: flags.latency,
    latencyJitterMs: flags.latencyJitter,
    ...faultRatesFromFlags(flags),
    rateLimitPerMinute: flags.rateLimit,
    rateLimitWindowMs: flags.rateLimitWindow,
    retryAfterSeconds: flags.retryAfter,
    hangMs: flags.hang,
    listingDelayMs: flags.listingDelay,
    listingIncludesIds: flags.listingIds,
    nameRewrite: nameRewriteFromFlags(flags),
    readLagMs: flags.readLag,
    readLagMinMs: flags.readLagMin,
    refuseKey: flags.refuseKey ? { status: flags.refuseKeyStatus, forMs: flags.refuseKeyFor, accounts } : undefined,
  });
  if (!config.success) {
    const issue = config.error.issues[0];
    const path = issue?.path.join('.') ?? '';
    const flag = FLAG_OF[path];
    const where = flag ?? `fault flags: ${path || 'config'}`;
    throw new InvalidArgumentError(`${where}: ${issue?.message ?? 'invalid'}`);
  }
  return config.data;
}

function faultRatesFromFlags(flags: Flags): Pick<FaultConfig, 'rates' | 'perOperation'> {
  const rates: FaultRates = flags.failRate ? mixedFaultRates(flags.failRate) : {};
  if (flags.lostResponseRate !== undefined) rates.lostResponse = flags.lostResponseRate;
  const perOperation: Partial<Record<SandboxOperation, FaultRates>> = {};
  for (const spec of flags.fault) {
    const { operation, kind, p } = parseFaultSpec(spec);
    if (operation) perOperation[operation] = { ...(perOperation[operation] ?? {}), [kind]: p };
    else rates[kind] = p;
  }
  for (const op of Object.keys(perOperation) as SandboxOperation[]) {
    perOperation[op] = { ...rates, ...perOperation[op] };
  }
  const out: Pick<FaultConfig, 'rates' | 'perOperation'> = {};
  if (Object.keys(rates).length > 0) out.rates = rates;
  if (Object.keys(perOperation).length > 0) out.perOperation = perOperation;
  return out;
}

/** Undefined unless some name flag is given, so a plain sandbox keeps names byte for byte. */
function nameRewriteFromFlags(flags: Flags): Record<string, unknown> | undefined {
  const rule = { normalize: flags.normalizeNames, case: flags.nameCase, maxLength: flags.cutNames, ellipsis: flags.cutEllipsis };
  return Object.values(rule).some((v) => v !== undefined) ? rule : undefined;
}

/** A flag that only means something beside another one is refused alone, rather than ignored. */
function requireCompanion(given: boolean, flag: string, companionGiven: boolean, companion: string): void {
  if (given && !companionGiven) throw new InvalidArgumentError(`${flag} needs ${companion}`);
}
