// One shape for every error answer: `{ error, message, problems? }`. Client mistakes Fastify finds
// before a handler runs (bad JSON, too large, wrong content type) get the same shape as ours.
import type { FastifyError, FastifyInstance } from 'fastify';

export function installErrorHandlers(app: FastifyInstance, limits: { bodyLimitBytes: number }): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500;
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || status === 413) {
      return reply.code(413).send({
        error: 'payload_too_large',
        message: `request body is larger than ${limits.bodyLimitBytes} bytes; send fewer events per request`,
      });
    }
    if (status >= 400 && status < 500) {
      const reason = clientReason(error);
      const problems = [{ path: '(body)', reason }];
      return reply.code(status).send({ error: status === 415 ? 'unsupported_media_type' : 'invalid_request', message: reason, problems });
    }
    // The message of an unexpected error may name internals; the log has it, the client gets a reference.
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({ error: 'internal', message: `internal error; the server log has the details (request ${request.id})` });
  });

  app.setNotFoundHandler((request, reply) => reply.code(404).send({ error: 'not_found', message: `no route ${request.method} ${request.url.split('?')[0]}` }));
}

function clientReason(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'is not valid JSON';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'is shorter or longer than its Content-Length';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'is empty; send a JSON object or array';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'must be JSON (Content-Type: application/json)';
    default:
      return error.message;
  }
}
