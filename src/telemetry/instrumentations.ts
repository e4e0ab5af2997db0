// The libraries traced, each set so that its spans carry no secret (src/telemetry/redact.ts) and the
// process's background chatter starts no traces of its own. Loaded only by startTracing().
import type { Span } from '@opentelemetry/api';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import { redactPath, redactQuery, redactUrl, redisCommandOnly } from './redact.ts';

/**
 * Requests that start no trace: probes and scrapes (every few seconds, all day) and the dashboard's
 * reads (its page, static files and the polling of an open tab). Its actions (retry, clean…) are
 * traced. The dashboard lives under src/http/dashboard.ts's DASHBOARD_PATH (a test checks it).
 */
const UNTRACED_PATHS: readonly string[] = ['/healthz', '/readyz', '/metrics'];
const DASHBOARD_PREFIX = '/admin/queues';

/** Whether a request (its URL as received, query included) is left untraced. */
export function untracedRequest({ url, method }: { url: string; method: string }): boolean {
  const path = url.split('?', 1)[0] ?? url;
  if (UNTRACED_PATHS.includes(path)) return true;
  const dashboard = path === DASHBOARD_PREFIX || path.startsWith(`${DASHBOARD_PREFIX}/`);
  return dashboard && (method === 'GET' || method === 'HEAD');
}

export async function loadInstrumentations(): Promise<Instrumentation[]> {
  const [{ PgInstrumentation }, { IORedisInstrumentation }, { UndiciInstrumentation }, { FastifyOtelInstrumentation }] = await Promise.all([
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
    import('@opentelemetry/instrumentation-undici'),
    import('@fastify/otel'),
  ]);
  return [
    // Statements inside a request or a job only: the periodic sweep, lag probes and pool connects
    // outside one would each be a trace of one span. Parameter values are never recorded (default).
    // No pg.connect / pg-pool.connect spans: one per statement borrowed from the pool, they were a
    // quarter of a batch's spans and said nothing the statement's own span does not.
    // A statement the worker prepares once (its writes, src/mapping/sql.ts `prepare`) is recorded
    // by name as `EXECUTE <name>` instead of its kilobyte of text, the same every time: encoding
    // those texts for export was most of tracing's cost per batch (bench:cost).
    new PgInstrumentation({
      requireParentSpan: true,
      ignoreConnectSpans: true,
      requestHook: (span: Span, { query }: { query: { name?: string | undefined } }) => {
        if (query.name) span.setAttribute('db.query.text', `EXECUTE ${query.name}`);
      },
    }),
    // requireParentSpan stays true (the default): BullMQ's polling outside a job is not traced.
    new IORedisInstrumentation({ dbStatementSerializer: redisCommandOnly }),
    // The remote calls (ky over undici's request) and any other outgoing HTTP.
    new UndiciInstrumentation({
      requestHook: (span: Span, request: { origin: string; path: string }) => {
        span.setAttribute('url.full', redactUrl(`${request.origin}${request.path}`));
        span.setAttribute('url.query', redactQuery(new URL(request.path, 'http://x').search));
      },
    }),
    // Subscribes to Fastify's initialization channel: every server the app builds is covered.
    // One span per request (route, method, status); no span per hook or handler, which would be
    // named after anonymous plugins' source text.
    new FastifyOtelInstrumentation({
      registerOnInitialization: true,
      instrumentHooks: false,
      instrumentHandler: false,
      ignorePaths: untracedRequest,
      requestHook: (span, request) => span.setAttribute('url.path', redactPath(request.url)),
    }) as Instrumentation,
  ];
}
