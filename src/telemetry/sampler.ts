// The sampler: the one OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG name (as the SDK would build it
// from them), except that BullMQ's housekeeping never starts a trace of its own. With telemetry on,
// every BullMQ worker opens a root span each time it polls for a job or checks for stalled jobs
// (seconds apart, in every process, all day), and Redis commands inside it would follow: traces
// nobody asked for. A root is decided here once; its children follow it (parent-based), so the
// commands under a dropped poll are dropped too. Jobs, queue adds and everything else are unaffected.
import type { Attributes, Context, Link, SpanKind } from '@opentelemetry/api';
import type { tracing } from '@opentelemetry/sdk-node';

type Tracing = typeof tracing;
type Env = Readonly<Record<string, string | undefined>>;

/** BullMQ's periodic span names (`<operation> <queue>`), dropped when they would be a trace's root. */
const HOUSEKEEPING = /^(getNextJob|startStalledCheckTimer|moveStalledJobsToWait|rateLimit) /;

/** The sampler for NodeSDK's `sampler` option (which otherwise replaces the environment's). */
export function createSampler(sdk: Tracing, api: { trace: { getSpan(context: Context): unknown } }, env: Env = process.env): tracing.Sampler {
  const chosen = samplerFromEnv(sdk, env);
  return {
    shouldSample(context: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]) {
      if (api.trace.getSpan(context) === undefined && HOUSEKEEPING.test(name)) return { decision: sdk.SamplingDecision.NOT_RECORD };
      return chosen.shouldSample(context, traceId, name, kind, attributes, links);
    },
    toString: () => `WithoutBullMQHousekeeping{${chosen.toString()}}`,
  };
}

/** What OTEL_TRACES_SAMPLER names; unknown names fall back to the default, parentbased_always_on. */
export function samplerFromEnv(sdk: Tracing, env: Env = process.env): tracing.Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on';
  const ratio = () => new sdk.TraceIdRatioBasedSampler(ratioOf(env.OTEL_TRACES_SAMPLER_ARG));
  const parentBased = (root: tracing.Sampler) => new sdk.ParentBasedSampler({ root });
  switch (name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return parentBased(new sdk.AlwaysOffSampler());
    case 'parentbased_traceidratio':
      return parentBased(ratio());
    default:
      return parentBased(new sdk.AlwaysOnSampler());
  }
}

/** OTEL_TRACES_SAMPLER_ARG for the ratio samplers: a number from 0 to 1, else 1 (the SDK's default). */
export function ratioOf(arg: string | undefined): number {
  const ratio = arg === undefined || arg.trim() === '' ? Number.NaN : Number(arg);
  return Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1;
}
