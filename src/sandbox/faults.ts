// Fault injection: what can go wrong between a client and the remote, on demand and reproducibly.
// Random decisions come from a seeded PRNG; one-shot faults are queued for targeted tests.
import { z } from 'zod';
import type { Refusal } from './auth.ts';
import { nameRewriteSchema } from './names.ts';
import { deriveSeed, mulberry32 } from './random.ts';
import { activeRefusal, refuseKeySchema } from './refusal.ts';
import { FAULT_KINDS, OPERATIONS, type SandboxOperation } from './vocabulary.ts';

export { FAULT_KINDS, OPERATIONS, type SandboxOperation } from './vocabulary.ts';

export type FaultKind = (typeof FAULT_KINDS)[number];

/** Faults decided before the operation runs: the remote state does not change (or, `lateEffect`, not yet). */
const BEFORE_EFFECT: ReadonlySet<FaultKind> = new Set(['error5xx', 'throttle', 'throttleNoRetryAfter', 'bodyRejected', 'lateEffect']);
export const takesEffect = (fault: FaultKind): boolean => !BEFORE_EFFECT.has(fault);

const rate = z.number().min(0).max(1);
const rates = z
  .partialRecord(z.enum(FAULT_KINDS), rate)
  .refine((r) => Object.values(r).reduce((sum: number, p) => sum + (p ?? 0), 0) <= 1 + 1e-9, 'fault probabilities must add up to at most 1');
const ms = z.number().int().min(0).max(3_600_000);

const faultSettings = z.strictObject({
  /** Added to every remote call (not the control endpoint). */
  latencyMs: ms.optional(),
  /** Plus a seeded uniform random 0..latencyJitterMs. */
  latencyJitterMs: ms.optional(),
  /** Probability per fault kind, for every operation. */
  rates: rates.optional(),
  /** Per operation; replaces `rates` for that operation. */
  perOperation: z.partialRecord(z.enum(OPERATIONS), rates).optional(),
  /** Authenticated calls admitted per window; more get HTTP 429 with no Retry-After. */
  rateLimitPerMinute: z.number().int().min(1).optional(),
  /** Per sandbox account (by name): its key's calls per window, in place of `rateLimitPerMinute`. */
  rateLimitPerAccount: z.record(z.string().min(1), z.number().int().min(1)).optional(),
  /** Window of the rate limit (default 60 000 ms: "per minute"); shorter only to keep tests fast. */
  rateLimitWindowMs: z.number().int().min(1).max(3_600_000).optional(),
  /** Value of Retry-After on `throttle` faults (default 1). */
  retryAfterSeconds: z.number().int().min(0).max(86_400).optional(),
  /** How long `hang` holds a request before dropping it (default 10 minutes). */
  hangMs: ms.optional(),
  /** How long after it arrived a `lateEffect` request takes effect (default 2 000 ms). */
  lateEffectMs: ms.optional(),
  /** Classes younger than this are not listed yet (default 0). */
  listingDelayMs: ms.optional(),
  /** Listing items carry `_id` (default true); the shorter documented example has none. */
  listingIncludesIds: z.boolean().optional(),
  /** How add-class rewrites the name it stores (the remote need not keep names byte for byte). */
  nameRewrite: nameRewriteSchema.optional(),
  /**
   * Replica lag: reads see a class added through add-class only after a seeded delay in
   * [readLagMinMs, readLagMs], and a newly enabled join link after another such delay (default 0).
   */
  readLagMs: ms.optional(),
  /** The floor of that delay (default 0): equal to `readLagMs`, every delay is exactly `readLagMs`. */
  readLagMinMs: ms.optional(),
  /** Every authenticated call answers 401/403 (a revoked or suspended key) while this is set. */
  refuseKey: refuseKeySchema.optional(),
});

export const faultConfigSchema = faultSettings.superRefine((c, ctx) => {
  const ceiling = c.readLagMs ?? 0;
  if ((c.readLagMinMs ?? 0) > ceiling) {
    const message = `must not exceed the read lag it is the floor of (readLagMs: ${c.readLagMs === undefined ? 'not set, so 0' : `${ceiling} ms`})`;
    ctx.addIssue({ code: 'custom', path: ['readLagMinMs'], message });
  }
});
export type FaultConfig = z.infer<typeof faultConfigSchema>;
export type FaultRates = Partial<Record<FaultKind, number>>;

export const oneShotSchema = z.strictObject({
  operation: z.enum([...OPERATIONS, '*']),
  fault: z.enum(FAULT_KINDS),
  count: z.number().int().min(1).max(1_000_000).default(1),
});
export type OneShotFault = z.input<typeof oneShotSchema>;

export interface FaultController {
  readonly config: Readonly<FaultConfig>;
  /** Replaces the whole config (restarting any `refuseKey.forMs`); throws a ZodError for an invalid one. */
  set(config: FaultConfig): void;
  /** The next `count` calls of `operation` ('*' = any) get `fault`, ahead of random faults. */
  enqueue(next: OneShotFault): void;
  queued(): Array<{ operation: SandboxOperation | '*'; fault: FaultKind; remaining: number }>;
  /** No faults, no latency, no rate limit, no name rewriting, read lag or refused key; empty queue. */
  clear(): void;
  /** The fault for this call, if any. Consumes a queued fault or one random draw. */
  decide(operation: SandboxOperation): FaultKind | undefined;
  latencyMs(): number;
  /** A visibility delay in [readLagMinMs, readLagMs] from its own stream (0 without read lag). */
  readLagMs(): number;
  /** The 401/403 every authenticated call of `account`'s key gets now, if that key is refused. */
  keyRefusal(account?: string): Refusal | undefined;
  /** A status for `error5xx`-like faults, from the fault stream. */
  serverErrorStatus(): number;
  reseed(seed: number): void;
}

/** `clock` (epoch ms) times a `refuseKey.forMs` from the moment its config was set. */
export function createFaultController(initial: FaultConfig = {}, seed = 0, clock: () => number = Date.now): FaultController {
  let config = faultConfigSchema.parse(initial);
  let setAt = clock();
  let queue: Array<{ operation: SandboxOperation | '*'; fault: FaultKind; remaining: number }> = [];
  let faultRandom = mulberry32(deriveSeed(seed, 2));
  let latencyRandom = mulberry32(deriveSeed(seed, 3));
  // Stream 5 (1 = store, 4 = teacher): lag draws must not shift the fault or latency streams.
  let lagRandom = mulberry32(deriveSeed(seed, 5));

  return {
    get config() {
      return config;
    },
    set(next) {
      config = faultConfigSchema.parse(next);
      setAt = clock();
    },
    enqueue(next) {
      const { operation, fault, count } = oneShotSchema.parse(next);
      queue.push({ operation, fault, remaining: count });
    },
    queued: () => queue.map((q) => ({ ...q })),
    clear() {
      config = {};
      queue = [];
    },
    decide(operation) {
      const index = queue.findIndex((q) => q.operation === operation || q.operation === '*');
      const queuedFault = queue[index];
      if (queuedFault) {
        if (--queuedFault.remaining === 0) queue.splice(index, 1);
        return queuedFault.fault;
      }
      const effective = config.perOperation?.[operation] ?? config.rates;
      return effective ? pick(effective, faultRandom()) : undefined;
    },
    latencyMs() {
      const jitter = config.latencyJitterMs ? Math.floor(latencyRandom() * (config.latencyJitterMs + 1)) : 0;
      return (config.latencyMs ?? 0) + jitter;
    },
    readLagMs() {
      if (!config.readLagMs) return 0;
      // Without a floor, the draw it always was: floor(r × (readLagMs + 1)).
      const floor = config.readLagMinMs ?? 0;
      return floor + Math.floor(lagRandom() * (config.readLagMs - floor + 1));
    },
    keyRefusal: (account) => activeRefusal(config.refuseKey, setAt, clock(), account),
    serverErrorStatus: () => [500, 502, 503][Math.floor(faultRandom() * 3)] ?? 500,
    reseed(nextSeed) {
      faultRandom = mulberry32(deriveSeed(nextSeed, 2));
      latencyRandom = mulberry32(deriveSeed(nextSeed, 3));
      lagRandom = mulberry32(deriveSeed(nextSeed, 5));
    },
  };
}

function pick(rates: FaultRates, draw: number): FaultKind | undefined {
  let cumulative = 0;
  for (const kind of FAULT_KINDS) {
    cumulative += rates[kind] ?? 0;
    if (draw < cumulative) return kind;
  }
  return undefined;
}

/**
 * `--fail-rate p`: a mix of transient faults adding up to p. Leaves out `bodyRejected`
 * (a permanent failure) so a demo under faults still completes every batch, and `unsafeId`
 * (a hostile remote, for targeted tests) so existing suites keep their mix.
 */
export function mixedFaultRates(failRate: number): FaultRates {
  const mix: FaultRates = {
    error5xx: 0.25,
    throttleNoRetryAfter: 0.1,
    throttle: 0.05,
    error5xxAfterStore: 0.1,
    lostResponse: 0.2,
    hang: 0.05,
    bodyError: 0.1,
    nonJsonBody: 0.05,
    truncatedBody: 0.1,
  };
  return Object.fromEntries(Object.entries(mix).map(([kind, share]) => [kind, share * failRate]));
}
