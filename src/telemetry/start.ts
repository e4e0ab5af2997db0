// Starts OpenTelemetry tracing for this process, configured by the standard OTEL_* variables, or
// does nothing at all. Every OpenTelemetry package is imported dynamically from here, after the
// decision: with tracing off none is loaded (and no loader hook is registered), so it costs nothing.
//
// Must run before the application is imported (src/cli/main.ts): ioredis is patched only through the
// import-in-the-middle loader hook, and only modules imported after the hook see it.
import { register } from 'node:module';
import { DEFAULT_SERVICE_NAME, namesService, tracingWanted } from './settings.ts';
import { holdQueueTelemetry, TRACER_NAME } from './queue-telemetry.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** Flushes the spans still buffered and stops the SDK. */
export type StopTracing = () => Promise<void>;

/** Starts tracing when the environment asks for it; returns how to stop (and flush) it, or undefined. */
export async function startTracing(env: Env = process.env): Promise<StopTracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  const hooksAcknowledged = await registerLoaderHook();
  const [sdkNode, api, { loadInstrumentations }, { createSampler }, { BullMQOtel }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/api'),
    import('./instrumentations.ts'),
    import('./sampler.ts'),
    import('bullmq-otel'),
  ]);
  const sdk = new sdkNode.NodeSDK({
    // NodeSDK's serviceName beats OTEL_SERVICE_NAME: only a default, for an environment that names none.
    ...(namesService(env) ? {} : { serviceName: DEFAULT_SERVICE_NAME }),
    // NodeSDK would otherwise also export metrics and logs over OTLP (Prometheus and pino do those).
    ...(env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
    sampler: createSampler(sdkNode.tracing, api, env),
    instrumentations: await loadInstrumentations(),
  });
  // Reads OTEL_EXPORTER_OTLP_* (endpoint, protocol, headers), OTEL_BSP_* and the resource variables.
  sdk.start();
  // The instrumentations told the hook which modules to wrap: wait until it knows, before any import.
  await hooksAcknowledged();
  holdQueueTelemetry(new BullMQOtel(TRACER_NAME));
  return async () => {
    holdQueueTelemetry(undefined);
    await sdk.shutdown();
  };
}

/**
 * Registers the ESM loader hook through which the instrumentations patch packages loaded by
 * `import` (only the modules they name are wrapped); returns a wait for the hook thread to have
 * heard of every module named so far.
 */
async function registerLoaderHook(): Promise<() => Promise<void>> {
  const { createAddHookMessageChannel } = await import('import-in-the-middle');
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, registerOptions);
  return waitForAllMessagesAcknowledged;
}
