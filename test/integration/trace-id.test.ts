// Trace ids in the audit trail: an event is stored with the trace id of the span active when it was
// written, and `history`, `history --json` and GET /v1/batches/:batchId/events show it, so an
// operator goes from a batch to its trace. This file registers a real tracer provider (in-memory
// exporter) and an async-hooks context manager for its own process, and takes both down after:
// no other test file runs with a global tracer.
import { type Span, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClassroomSync, createClassroomSync, loadConfig } from '../../src/index.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { type TimelineEntry, readTimeline } from '../../src/mapping/index.ts';
import { formatTimeline } from '../../src/read-model/index.ts';
import { currentTraceId } from '../../src/telemetry/trace-id.ts';
import { killAllChildren, runCli } from '../helpers/cli.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, call, useTestWorker } from './http-helpers.ts';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  // Both return false when something registered first: then this file would not test what it says.
  expect(context.setGlobalContextManager(contextManager.enable())).toBe(true);
  expect(trace.setGlobalTracerProvider(provider)).toBe(true);
});

afterAll(async () => {
  trace.disable();
  context.disable();
  await provider.shutdown();
});

const harness = useHarness();
const { h } = harness;
harness.defer(killAllChildren);
const worker = useTestWorker(harness);
let library: ClassroomSync;

beforeAll(() => {
  const opened = createClassroomSync(loadConfig(h.env), { logger: createLogger({ level: 'silent' }) });
  library = opened;
  harness.defer(() => opened.close());
});

const tracer = () => trace.getTracer('trace-id.test');

/** Runs `work` inside a new active span (the integrator's own), ended after; returns the span's trace id. */
async function inSpan(name: string, work: (span: Span) => Promise<unknown>): Promise<string> {
  return tracer().startActiveSpan(name, async (span) => {
    try {
      await work(span);
      return span.spanContext().traceId;
    } finally {
      span.end();
    }
  });
}

const timelineOf = async (batchId: string) => (await readTimeline(h.runtime.database.db, { instituteId: h.config.classroom.instituteId, batchId }))!;
const received = async (batchId: string) => (await timelineOf(batchId)).find((e) => e.type === 'received')!;

describe('trace ids in the audit trail', () => {
  it('currentTraceId is the active span’s, and undefined with none', async () => {
    expect(currentTraceId()).toBeUndefined();
    const traceId = await inSpan('probe', async (span) => {
      await new Promise((r) => setTimeout(r, 1));
      expect(currentTraceId()).toBe(span.spanContext().traceId);
    });
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(currentTraceId()).toBeUndefined();
  });

  it('stores the trace id of the span a batch was published in; none without a span', async () => {
    const traced = await inSpan('integrator.publish', () => library.publishBatchCreated({ batchId: 'tr-1', name: 'Traced', subject: 'Art' }));
    await library.publishBatchCreated({ batchId: 'tr-0', name: 'Untraced', subject: 'Art' });
    expect(exporter.getFinishedSpans().map((s) => s.spanContext().traceId)).toContain(traced);

    expect(await received('tr-1')).toMatchObject({ type: 'received', toState: 'pending', traceId: traced });
    expect((await received('tr-0')).traceId).toBeNull();

    // A change goes through the shared events insert (and is another trace).
    await waitFor(async () => (await timelineOf('tr-1')).some((e) => e.toState === 'synced'), 'tr-1 synced');
    const updating = await inSpan('integrator.update', () => library.publishBatchUpdated({ batchId: 'tr-1', name: 'Traced, renamed', version: 2 }));
    expect(updating).not.toBe(traced);
    const updated = (await timelineOf('tr-1')).find((e) => e.type === 'updated');
    expect(updated?.traceId).toBe(updating);
  });

  it('`history` shows the trace id where it changes, `history --json` on each event', async () => {
    const traced = (await received('tr-1')).traceId!;
    const text = await runCli(['history', 'tr-1'], { env: h.env });
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toMatch(new RegExp(`received ∅ → pending  trace ${traced}$`));
    expect(lines.filter((l) => l.includes(` trace ${traced}`))).toHaveLength(1);
    expect(lines.find((l) => /\bupdated\b/.test(l))).toMatch(/ trace [0-9a-f]{32}$/);

    const json = await runCli(['history', 'tr-1', '--json'], { env: h.env });
    expect(json.code).toBe(0);
    const entries = JSON.parse(json.stdout) as (TimelineEntry | { type: 'webhook' })[];
    const events = entries.filter((e): e is TimelineEntry => e.type !== 'webhook');
    expect(events[0]).toMatchObject({ type: 'received', traceId: traced });
    expect(events.every((e) => 'traceId' in e && (e.traceId === null || /^[0-9a-f]{32}$/.test(e.traceId)))).toBe(true);

    const untraced = await runCli(['history', 'tr-0'], { env: h.env });
    expect(untraced.stdout.split('\n')[0]).toMatch(/received ∅ → pending$/);
    const untracedJson = JSON.parse((await runCli(['history', 'tr-0', '--json'], { env: h.env })).stdout) as TimelineEntry[];
    expect(untracedJson[0]).toMatchObject({ type: 'received', traceId: null });
  });

  it('GET /v1/batches/:batchId/events shows traceId, null when none', async () => {
    const traced = (await received('tr-1')).traceId!;
    const answer = await call(`${worker.url}/v1/batches/tr-1/events`, { headers: BEARER });
    expect(answer.status).toBe(200);
    expect(answer.body.events[0]).toMatchObject({ type: 'received', traceId: traced });
    const untraced = await call(`${worker.url}/v1/batches/tr-0/events`, { headers: BEARER });
    expect(untraced.body.events[0]).toMatchObject({ type: 'received', traceId: null });
  });
});

describe('history text: the trace where it changes', () => {
  const entry = (id: number, traceId: string | null): TimelineEntry => ({
    id,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, id)),
    type: 'repair',
    fromState: 'synced',
    toState: 'synced',
    operation: null,
    httpStatus: null,
    bodyStatus: null,
    durationMs: null,
    outcome: null,
    error: null,
    attempt: null,
    workerId: null,
    classId: null,
    detail: null,
    traceId,
  });
  const [a, b] = ['a'.repeat(32), 'b'.repeat(32)];

  it('notes a trace on the first line of each run of it, `none` when it ends, nothing for untraced trails', () => {
    const notes = formatTimeline([entry(1, null), entry(2, a), entry(3, a), entry(4, null), entry(5, b), entry(6, a)])
      .split('\n')
      .map((line) => / {2}trace (\S+)$/.exec(line)?.[1] ?? '');
    expect(notes).toEqual(['', a, '', 'none', b, a]);
    expect(formatTimeline([entry(1, null), entry(2, null)])).not.toMatch(/trace/);
  });
});
