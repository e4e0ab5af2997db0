// `classroom-sync sandbox`: runs the stand-in remote on a port, with faults set from flags.
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Config } from '../config.ts';
import { parseDuration } from '../duration.ts';
import { FAULT_KINDS, faultConfigSchema, mixedFaultRates, OPERATIONS, type FaultConfig, type FaultRates } from './faults.ts';
import { sandboxOptionsFromConfig, startSandbox } from './index.ts';

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
  institute: string[];
}

export interface SandboxIo {
  print(line: string): void;
  /** Resolves when the sandbox should stop; by default on SIGINT or SIGTERM. */
  untilStopped(): Promise<void>;
}

const defaultIo: SandboxIo = {
  print: (line) => process.stdout.write(`${line}\n`),
  untilStopped: () =>
    new Promise((resolve) => {
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        resolve();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    }),
};

export function registerSandboxCommand(program: Command, loadConfig: () => Config, io: SandboxIo = defaultIo): Command {
  return program
    .command('sandbox')
    .description('run a local stand-in for the classroom service (accepts the CLASSROOM_* credentials), with optional seeded faults')
    .option('--port <n>', 'port to listen on (0 = any free port)', integer(0, 65535), 4010)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--seed <n>', 'seed for ids, tokens, random faults and jitter (default: random, printed)', integer(0, 0xffffffff))
    .option('--latency <ms>', 'fixed delay added to every call, e.g. 50 or 200ms', milliseconds)
    .option('--latency-jitter <ms>', 'plus a seeded random delay from 0 up to this', milliseconds)
    .option('--fail-rate <p>', 'probability (0..1) of a fault, spread over a mix of transient faults (5xx, 429, lost response, hang, bad bodies)', probability)
    .option('--lost-response-rate <p>', 'probability that a call takes effect but its response is lost', probability)
    .addOption(
      new Option('--fault <spec>', `[operation:]kind=p, repeatable; kinds: ${FAULT_KINDS.join(', ')}; operations: ${OPERATIONS.join(', ')}`)
        .argParser((spec: string, previous: string[]) => {
          parseFaultSpec(spec); // fail at parse time, naming the flag
          return collect(spec, previous);
        })
        .default([]),
    )
    .option('--rate-limit <callsPerMinute>', 'admit at most this many authenticated calls per minute; more get 429 with no Retry-After', integer(1, 1_000_000))
    .option('--rate-limit-window <ms>', 'length of the rate-limit window (default 60s)', milliseconds)
    .option('--retry-after <seconds>', 'Retry-After sent with "throttle" faults (default 1)', integer(0, 86_400))
    .option('--hang <ms>', 'how long a "hang" fault holds a request before dropping it (default 10m)', milliseconds)
    .option('--listing-delay <ms>', 'classes younger than this are not listed yet', milliseconds)
    .option('--no-listing-ids', 'institute listing items without _id (the shorter documented form)')
    .addOption(new Option('--institute <id>', 'another institute that exists (repeatable); CLASSROOM_INSTITUTE_ID always does').argParser(collect).default([]))
    .action(async (flags: SandboxFlags, command: Command) => {
      const base = sandboxOptionsFromConfig(loadConfig());
      let faults: FaultConfig;
      try {
        faults = faultConfigFromFlags(flags);
      } catch (error) {
        // Reported like any other bad flag: one line, exit code 1.
        if (error instanceof InvalidArgumentError) return command.error(`error: ${error.message}`);
        throw error;
      }
      const sandbox = await startSandbox(
        { ...base, instituteIds: [...base.instituteIds, ...flags.institute], faults, seed: flags.seed },
        { port: flags.port, host: flags.host },
      );
      io.print(`sandbox listening on ${sandbox.url} (seed ${sandbox.state({ classes: false }).seed}; control at ${sandbox.url}/__sandbox/state)`);
      await io.untilStopped();
      await sandbox.close();
    });
}

/** Flags → a validated FaultConfig. Per-operation `--fault`s are layered over the global rates. */
export function faultConfigFromFlags(flags: Omit<SandboxFlags, 'port' | 'host' | 'institute'>): FaultConfig {
  const rates: FaultRates = flags.failRate ? mixedFaultRates(flags.failRate) : {};
  if (flags.lostResponseRate !== undefined) rates.lostResponse = flags.lostResponseRate;
  const perOperation: Partial<Record<(typeof OPERATIONS)[number], FaultRates>> = {};
  for (const spec of flags.fault) {
    const { operation, kind, p } = parseFaultSpec(spec);
    if (operation) perOperation[operation] = { ...(perOperation[operation] ?? {}), [kind]: p };
    else rates[kind] = p;
  }
  for (const op of Object.keys(perOperation) as (typeof OPERATIONS)[number][]) {
    perOperation[op] = { ...rates, ...perOperation[op] };
  }
  const config = faultConfigSchema.safeParse({
    latencyMs: flags.latency,
    latencyJitterMs: flags.latencyJitter,
    rates: Object.keys(rates).length > 0 ? rates : undefined,
    perOperation: Object.keys(perOperation).length > 0 ? perOperation : undefined,
    rateLimitPerMinute: flags.rateLimit,
    rateLimitWindowMs: flags.rateLimitWindow,
    retryAfterSeconds: flags.retryAfter,
    hangMs: flags.hang,
    listingDelayMs: flags.listingDelay,
    listingIncludesIds: flags.listingIds,
  });
  if (!config.success) {
    const issue = config.error.issues[0];
    throw new InvalidArgumentError(`fault flags: ${issue?.path.join('.') || 'config'}: ${issue?.message ?? 'invalid'}`);
  }
  return config.data;
}

function parseFaultSpec(spec: string) {
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

function integer(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };
}

function milliseconds(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError('must be milliseconds or a duration such as 500ms, 2s, 10m');
  return ms;
}

function probability(value: string): number {
  const p = Number(value);
  if (value.trim() === '' || !Number.isFinite(p) || p < 0 || p > 1) throw new InvalidArgumentError('must be a probability from 0 to 1');
  return p;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
