// Sending answers, including the ones a healthy server never sends: lost, hung, unreadable.
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FaultKind } from './faults.ts';

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

export const success = (data: unknown): Answer => ({ status: 200, body: { status: 200, message: 'Success', data } });
export const failure = (status: number, message: string): Answer => ({ status, body: { status, message } });

export function send(reply: FastifyReply, answer: Answer, headers: Record<string, string> = {}): FastifyReply {
  return reply.code(answer.status).headers(headers).send(answer.body);
}

/** Requests held open by the `hang` fault; all dropped on close so shutdown never waits on them. */
export interface HangRegistry {
  hold(socket: Socket, ms: number): void;
  releaseAll(): void;
}

export function createHangRegistry(): HangRegistry {
  const held = new Map<Socket, NodeJS.Timeout>();
  const release = (socket: Socket) => {
    clearTimeout(held.get(socket));
    held.delete(socket);
    socket.destroy();
  };
  return {
    hold(socket, ms) {
      held.set(socket, setTimeout(() => release(socket), ms));
      // The client giving up closes the socket: stop the timer then.
      socket.once('close', () => release(socket));
    },
    releaseAll() {
      for (const socket of [...held.keys()]) release(socket);
    },
  };
}

export interface FaultDelivery {
  fault: FaultKind;
  /** What the call would have answered without the fault; undefined when the fault struck before it ran. */
  answer: Answer | undefined;
  serverErrorStatus: number;
  retryAfterSeconds: number;
  hangMs: number;
  hangs: HangRegistry;
}

export function deliverFault(request: FastifyRequest, reply: FastifyReply, d: FaultDelivery): FastifyReply {
  switch (d.fault) {
    case 'error5xx':
    case 'error5xxAfterStore':
      return send(reply, failure(d.serverErrorStatus, 'Internal server error'));
    case 'throttle':
      return send(reply, failure(429, 'Too many requests'), { 'retry-after': String(d.retryAfterSeconds) });
    case 'throttleNoRetryAfter':
      return send(reply, failure(429, 'Too many requests'));
    case 'bodyRejected':
      return send(reply, { status: 200, body: { status: 400, message: 'Request could not be processed' } });
    case 'bodyError':
      return send(reply, { status: 200, body: { status: 500, message: 'Something went wrong' } });
    case 'nonJsonBody':
      return raw(reply, 'text/html', '<html><body><h1>502 Bad Gateway</h1></body></html>');
    case 'truncatedBody': {
      const json = JSON.stringify(d.answer?.body ?? { status: 200, message: 'Success', data: {} });
      return raw(reply, 'application/json', json.slice(0, Math.max(1, Math.floor(json.length / 2))));
    }
    case 'lostResponse':
      reply.hijack();
      request.raw.socket.destroy();
      return reply;
    case 'hang':
      reply.hijack();
      d.hangs.hold(request.raw.socket, d.hangMs);
      return reply;
  }
}

/** A complete HTTP 200 whose body is not what was announced; Content-Length matches what is sent. */
function raw(reply: FastifyReply, contentType: string, body: string): FastifyReply {
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  reply.raw.end(body);
  return reply;
}
