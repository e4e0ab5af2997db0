// Whether this process exports traces, decided by the standard OpenTelemetry variables alone (no
// setting of our own to learn). Nothing here imports OpenTelemetry: with tracing off, the CLI and the
// worker never load the SDK, its exporters or the instrumentations.
export const DEFAULT_SERVICE_NAME = 'classroom-sync';

type Env = Readonly<Record<string, string | undefined>>;

const given = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';

/**
 * True when the environment asks for traces: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or an explicit OTEL_TRACES_EXPORTER other than `none`, and
 * OTEL_SDK_DISABLED is not `true`. An exporter named without an endpoint uses its own default
 * (OTLP: http://localhost:4318), as the specification says.
 */
export function tracingWanted(env: Env = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (exporters.length > 0) return exporters.some((name) => name !== 'none');
  return given(env.OTEL_EXPORTER_OTLP_ENDPOINT) || given(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** True when the environment names the service itself (OTEL_SERVICE_NAME, or service.name in OTEL_RESOURCE_ATTRIBUTES). */
export function namesService(env: Env = process.env): boolean {
  return given(env.OTEL_SERVICE_NAME) || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
}
