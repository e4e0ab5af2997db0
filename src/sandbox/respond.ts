// Sending answers, including the ones a healthy server never sends: lost, hung, unreadable.
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FaultKind } from './faults.ts';
import type { Clock } from '../support/clock.ts';

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

export const success = (data: unknown): Answer => ({ status: 200, body: { status: 200, message: 'Success', data } });
export const failure = (status: number, message: string): Answer => ({ status, body: { status, message } });

export function send(reply: FastifyReply, answer: Answer, headers: Record<string, string> = {}): FastifyReply {
  return reply.code(answer.status).headers(headers).send(answer.body);
}

/** Requests held open by the `hang` and `lateEffect` faults; all dropped on close so shutdown never waits on them. */
export interface HangRegistry {
  hold(socket: Socket, ms: number): void;
  /** Holds the request without an answer; `effect` runs `ms` later whether the client waited or not, then the connection drops. */
  later(socket: Socket, ms: number, effect: () => void): void;
  releaseAll(): void;
}

export function createHangRegistry(timers: Pick<Clock, 'after'>): HangRegistry {
  const held = new Map<Socket, () => void>();
  const pending = new Set<() => void>();
  const release = (socket: Socket) => {
    held.get(socket)?.();
    held.delete(socket);
    socket.destroy();
  };
  return {
    hold(socket, ms) {
      held.set(
        socket,
        timers.after(ms, () => release(socket)),
      );
      // The client giving up closes the socket: stop the timer then.
      socket.once('close', () => release(socket));
    },
    later(socket, ms, effect) {
      const cancel = timers.after(ms, () => {
        pending.delete(cancel);
        effect();
        socket.destroy();
      });
      pending.add(cancel);
    },
    releaseAll() {
      for (const socket of [...held.keys()]) release(socket);
      for (const cancel of pending) cancel();
      pending.clear();
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
  /** For `lateEffect`: how long until the call takes effect, and the effect. */
  lateEffect: { ms: number; run: () => void };
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
    case 'unsafeId':
      return send(reply, d.answer ? withUnsafeIds(d.answer) : failure(500, 'Internal server error'));
    case 'lostResponse':
      reply.hijack();
      request.raw.socket.destroy();
      return reply;
    case 'hang':
      reply.hijack();
      d.hangs.hold(request.raw.socket, d.hangMs);
      return reply;
    case 'lateEffect':
      reply.hijack();
      d.hangs.later(request.raw.socket, d.lateEffect.ms, d.lateEffect.run);
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

const LISTS = ['classes', 'pendingClasses', 'hiddenClasses'] as const;

/** The same answer with the class's `_id` (or each listed item's) turned into "../<id>". */
function withUnsafeIds(answer: Answer): Answer {
  if (answer.status !== 200) return answer;
  const unsafe = (value: unknown): unknown => {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
    const copy: Record<string, unknown> = { ...value };
    if (typeof copy._id === 'string') copy._id = `../${copy._id}`;
    for (const list of LISTS) {
      const items = copy[list];
      if (Array.isArray(items)) copy[list] = items.map(unsafe);
    }
    return copy;
  };
  return { ...answer, body: { ...answer.body, data: unsafe(answer.body.data) } };
}
