// An OTLP/HTTP receiver in the test process: what a collector would be for a child process started
// with OTEL_EXPORTER_OTLP_ENDPOINT=<url> and OTEL_EXPORTER_OTLP_PROTOCOL=http/json. It keeps every
// span it is sent, flattened (attributes as plain values), and answers as a collector does.
import { type IncomingMessage, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** OTLP span kinds. */
export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Undefined on a trace's root. */
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  scope: string;
  /** The resource's service.name. */
  service: string | undefined;
  attributes: Record<string, unknown>;
  /** Every attribute value (the resource's, events' and links' included) and the status message, as text: for "no secret anywhere" checks. */
  allValues: string[];
}

export interface OtlpReceiver {
  /** Base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter posts to `<url>/v1/traces`). */
  url: string;
  spans(): ReceivedSpan[];
  /** How many export requests arrived (any signal). */
  requests(): number;
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: KeyValue[] };
  bytesValue?: string;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  events?: { name: string; attributes?: KeyValue[] }[];
  links?: { traceId: string; spanId: string; attributes?: KeyValue[] }[];
  status?: { message?: string };
}
interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { scope?: { name?: string }; spans?: JsonSpan[] }[] }[];
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  let requests = 0;
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      requests++;
      if (req.method === 'POST' && req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        received.push(...flatten(JSON.parse(body) as ExportRequest));
      }
      // An empty ExportTraceServiceResponse: everything accepted.
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function flatten(message: ExportRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of message.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        const attributes = attributesOf(span.attributes);
        const more = [...(span.events ?? []), ...(span.links ?? [])].flatMap((e) => Object.values(attributesOf(e.attributes)));
        spans.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId || undefined,
          name: span.name,
          kind: span.kind,
          scope: ss.scope?.name ?? '',
          service: typeof resource['service.name'] === 'string' ? resource['service.name'] : undefined,
          attributes,
          allValues: [...Object.values(attributes), ...Object.values(resource), ...more, span.name, span.status?.message ?? ''].map((value) =>
            typeof value === 'string' ? value : JSON.stringify(value),
          ),
        });
      }
    }
  }
  return spans;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plainValue(value)]));
}

function plainValue(value: AnyValue | undefined): unknown {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plainValue);
  if (value.kvlistValue) return attributesOf(value.kvlistValue.values);
  return value.bytesValue;
}
