// The trace id of the span active now, for whatever records it beside its own data (a batch's audit
// events: an operator goes from a batch's history to its trace). Only `@opentelemetry/api`: src/mapping
// imports this file, so it must not pull the SDK, an exporter or anything else of src/ in.
//
// With no SDK registered (tracing off, the library in a process that traces nothing) the API's
// context manager is a no-op: `getActiveSpan()` finds no span in its empty context, and this returns
// undefined after a few function calls (measured: about 40 ns a call). A span the sampler dropped
// still has a valid trace id, returned too: it still ties together what one request or job wrote,
// though the tracing backend may hold no trace under it.
import { isSpanContextValid, trace } from '@opentelemetry/api';

/** The active span's trace id (32 lowercase hex digits); undefined when there is no valid one. */
export function currentTraceId(): string | undefined {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? sc.traceId : undefined;
}
