// The tracing decisions that need no process: when the SDK starts, which sampler the environment
// names, which roots are dropped, and what a URL or a Redis command leaves in a span.
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { describe, expect, it } from 'vitest';
import { commandOf } from '../../src/telemetry/command-span.ts';
import { redactPath, redactQuery, redactUrl, redisCommandOnly } from '../../src/telemetry/redact.ts';
import { createSampler, ratioOf, samplerFromEnv } from '../../src/telemetry/sampler.ts';
import { namesService, tracingWanted } from '../../src/telemetry/settings.ts';

describe('tracingWanted', () => {
  it('is false without the standard variables, and when the SDK is disabled', () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: ' TRUE ' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBe(false);
  });

  it('is true with an OTLP endpoint or a traces exporter named', () => {
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBe(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'none, console' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'false' })).toBe(true);
  });

  it('knows when the environment names the service (else the default classroom-sync is passed)', () => {
    expect(namesService({})).toBe(false);
    expect(namesService({ OTEL_SERVICE_NAME: 'sync-eu' })).toBe(true);
    expect(namesService({ OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod, service.name=sync-eu' })).toBe(true);
    expect(namesService({ OTEL_RESOURCE_ATTRIBUTES: 'service.namespace=x' })).toBe(false);
  });
});

describe('sampler', () => {
  const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 });
  const decide = (env: Record<string, string>, name: string, context = ROOT_CONTEXT) =>
    createSampler(tracing, { trace }, env).shouldSample(context, 'c'.repeat(32), name, SpanKind.INTERNAL, {}, []).decision;

  it("drops BullMQ's polling and stall checks as roots, keeps them (and everything else) under a parent", () => {
    for (const name of ['getNextJob batch-sync', 'startStalledCheckTimer reconcile', 'moveStalledJobsToWait batch-sync-background']) {
      expect(decide({}, name)).toBe(tracing.SamplingDecision.NOT_RECORD);
      expect(decide({}, name, parent)).toBe(tracing.SamplingDecision.RECORD_AND_SAMPLED);
    }
    expect(decide({}, 'process reconcile')).toBe(tracing.SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide({}, 'classroom-sync enqueue')).toBe(tracing.SamplingDecision.RECORD_AND_SAMPLED);
  });

  it('follows OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG', () => {
    expect(decide({ OTEL_TRACES_SAMPLER: 'always_off' }, 'request')).toBe(tracing.SamplingDecision.NOT_RECORD);
    expect(decide({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, 'request')).toBe(tracing.SamplingDecision.NOT_RECORD);
    expect(decide({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, 'request', parent)).toBe(
      tracing.SamplingDecision.RECORD_AND_SAMPLED,
    );
    expect(samplerFromEnv(tracing, {}).toString()).toMatch(/ParentBased.*AlwaysOn/);
    expect(samplerFromEnv(tracing, { OTEL_TRACES_SAMPLER: 'bogus' }).toString()).toMatch(/ParentBased.*AlwaysOn/);
    expect([ratioOf('0.25'), ratioOf(''), ratioOf('2'), ratioOf('x'), ratioOf(undefined)]).toEqual([0.25, 1, 1, 1, 1]);
  });
});

describe('what spans may hold', () => {
  it('keeps a Redis command, never its arguments', () => {
    expect(redisCommandOnly('evalsha')).toBe('evalsha');
  });

  it('drops credentials and query values from URLs and paths', () => {
    expect(redactUrl('https://user:secret@remote.example/user/v2/classes/1?full=true&key=k3y')).toBe('https://remote.example/user/v2/classes/1?full=…&key=…');
    expect(redactUrl('http://127.0.0.1:9/addClass')).toBe('http://127.0.0.1:9/addClass');
    expect(redactUrl('not a url')).toBe('');
    expect(redactPath('/v1/batches?token=abc&page=2')).toBe('/v1/batches?token=…&page=…');
    expect(redactPath('/v1/batches')).toBe('/v1/batches');
    expect(redactQuery('')).toBe('');
  });

  it('names the command a CLI run is traced under', () => {
    expect(commandOf(['node', 'main.js', '--verbose', 'enqueue', 'file.ndjson'])).toBe('enqueue');
    expect(commandOf(['node', 'main.js', '--version'])).toBeUndefined();
  });
});
