// `classroom-sync sandbox`: runs the stand-in remote on a port, with faults set from flags.
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Config } from '../config/config.ts';
import type { FaultConfig } from '../sandbox/faults.ts';
import { FAULT_KINDS, NAME_CASES, OPERATIONS } from '../sandbox/vocabulary.ts';
import { parseFaultSpec, refusalStatus } from './fault-spec.ts';
import { collect, integer, milliseconds, oneOf, probability } from './parse.ts';
import type { SandboxFlags } from './sandbox-flags.ts';

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
  const command = program
    .command('sandbox')
    .description('run a local stand-in for the classroom service (accepts the CLASSROOM_* credentials), with optional seeded faults')
    .option('--port <n>', 'port to listen on (0 = any free port)', integer(0, 65535), 4010)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--seed <n>', 'seed for ids, tokens, random faults and jitter (default: random, printed)', integer(0, 0xffffffff));
  addFaultOptions(command);
  addBehaviourOptions(command);
  return command.action(async (flags: SandboxFlags, self: Command) => {
    const config = loadConfig();
    const { faultConfigFromFlags } = await import('./sandbox-flags.ts');
    let faults: FaultConfig;
    try {
      faults = faultConfigFromFlags(flags);
      refuseOnlyKnownAccounts(faults, config);
    } catch (error) {
      // Reported like any other bad flag: one line, exit code 1.
      if (error instanceof InvalidArgumentError) return self.error(`error: ${error.message}`);
      throw error;
    }
    await runSandbox(config, flags, faults, io);
  });
}

/** `--refuse-key-account` must name an account the sandbox knows, or it would refuse nothing. */
function refuseOnlyKnownAccounts(faults: FaultConfig, config: Config): void {
  const known = config.accounts.map((a) => a.name);
  const unknown = faults.refuseKey?.accounts?.find((name) => !known.includes(name));
  if (unknown !== undefined) {
    throw new InvalidArgumentError(
      `--refuse-key-account ${unknown}: no account of that name (accounts: ${known.join(', ')}; set CLASSROOM_ACCOUNTS_FILE for more)`,
    );
  }
}

/** Delays, fault rates and the rate limit: what makes calls slow or fail. */
function addFaultOptions(command: Command): void {
  command
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
    .option('--hang <ms>', 'how long a "hang" fault holds a request before dropping it (default 10m)', milliseconds);
}

/** How the stand-in differs from an ideal remote: listing, names, replica lag, a refused key, more institutes. */
function addBehaviourOptions(command: Command): void {
  command
    .option('--listing-delay <ms>', 'classes younger than this are not listed yet', milliseconds)
    .option('--no-listing-ids', 'institute listing items without _id (the shorter documented form)')
    .option('--normalize-names', 'add-class stores names in Unicode NFC, whitespace runs collapsed to one space, trimmed')
    .option('--name-case <case>', `add-class stores names in this case: ${NAME_CASES.join(' or ')}`, oneOf(NAME_CASES))
    .option('--cut-names <n>', 'add-class keeps at most n characters (code points) of a name', integer(1, 1_000))
    .option('--cut-ellipsis', 'a name cut by --cut-names ends in "…" (within the n characters)')
    .option('--read-lag <ms>', 'replica lag: reads see a new class, and a newly enabled join link, a seeded 0..ms later', milliseconds)
    .option('--read-lag-min <ms>', 'the floor of that lag: a seeded min..ms later (equal to --read-lag: always ms)', milliseconds)
    .option('--refuse-key', 'answer every remote call 401, as for a revoked key (see --refuse-key-status)')
    .option('--refuse-key-status <status>', 'status of the refusal: 401 (revoked, default) or 403 (suspended)', refusalStatus)
    .option('--refuse-key-for <ms>', 'the refusal ends by itself this long after the sandbox starts', milliseconds)
    .addOption(
      new Option('--refuse-key-account <name>', "refuse only this account's key (repeatable; names from CLASSROOM_ACCOUNTS_FILE)")
        .argParser(collect)
        .default([]),
    )
    .addOption(new Option('--institute <id>', 'another institute that exists (repeatable); CLASSROOM_INSTITUTE_ID always does').argParser(collect).default([]));
}

/** Serves until `io.untilStopped()` resolves, then closes; prints where it listens and its seed. */
async function runSandbox(config: Config, flags: SandboxFlags, faults: FaultConfig, io: SandboxIo): Promise<void> {
  const { sandboxOptionsFromConfig, startSandbox } = await import('../sandbox/index.ts');
  const base = sandboxOptionsFromConfig(config);
  const sandbox = await startSandbox(
    { ...base, instituteIds: [...base.instituteIds, ...flags.institute], faults, seed: flags.seed },
    { port: flags.port, host: flags.host },
  );
  io.print(`sandbox listening on ${sandbox.url} (seed ${sandbox.state({ classes: false }).seed}; control at ${sandbox.url}/__sandbox/state)`);
  await io.untilStopped();
  await sandbox.close();
}
