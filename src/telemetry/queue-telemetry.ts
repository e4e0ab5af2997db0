// The BullMQ telemetry of this process: what makes a job's producer span (where it was queued) the
// parent of its consumer span (where it runs), across processes, retries, delays and restarts. Held
// here so the queue and worker factories need not know how tracing started. Only a type is imported
// from BullMQ, and bullmq-otel is loaded only when there is something to trace.
import { createRequire } from 'node:module';
import { ProxyTracer, trace } from '@opentelemetry/api';
import type { Telemetry } from 'bullmq';

let held: Telemetry | undefined;

/** Set by startTracing() once the SDK runs (src/telemetry/start.ts). */
export function holdQueueTelemetry(telemetry: Telemetry | undefined): void {
  held = telemetry;
}

/**
 * The telemetry for a new Queue or Worker, or undefined when nothing in this process traces. When
 * classroom-sync runs as a library inside an application that registered its own OpenTelemetry SDK
 * (before creating the handle), the queue traces under that SDK: a batch published inside the
 * caller's span continues the caller's trace. Factories are synchronous, hence the require of
 * bullmq-otel's CommonJS build; it shares @opentelemetry/api's global registry with the ESM build.
 */
export function queueTelemetry(): Telemetry | undefined {
  if (held || !hostTracerRegistered()) return held;
  const { BullMQOtel } = createRequire(import.meta.url)('bullmq-otel') as typeof import('bullmq-otel');
  held = new BullMQOtel(TRACER_NAME);
  return held;
}

export const TRACER_NAME = 'classroom-sync';

/** The API hands out a ProxyTracer until some SDK registers a tracer provider. */
function hostTracerRegistered(): boolean {
  return !(trace.getTracer(TRACER_NAME) instanceof ProxyTracer);
}
