// A stand-in OTLP/HTTP collector for benchmarks: takes every POST to /v1/traces, counts the
// requests and bytes, answers 200 and keeps nothing, so the exporter's cost is measured and the
// collector's is not.
import { type Server, createServer } from 'node:http';

export interface Collector {
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` for the process under test. */
  url: string;
  received(): { requests: number; bytes: number };
  close(): Promise<void>;
}

export async function startCollector(): Promise<Collector> {
  let requests = 0;
  let bytes = 0;
  const server: Server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') requests += 1;
      // An empty body is a valid ExportTraceServiceResponse in protobuf; JSON wants an object.
      const json = String(request.headers['content-type']).includes('json');
      response.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => ({ requests, bytes }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
