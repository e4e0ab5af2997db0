// An API client's institutes on the batch routes: publishing outside them is refused by name,
// reading outside them looks exactly like reading a batch that does not exist.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type ApiClient, reaches } from '../access/roles.ts';

/** The client the /v1 hook signed in; a route reached without one is a wiring mistake. */
export function clientOf(request: FastifyRequest): ApiClient {
  const client = request.apiClient;
  if (!client) throw new Error(`no API client on ${request.method} ${request.routeOptions.url}: the authentication hook did not run`);
  return client;
}

/** The institutes among `instituteIds` the client may not reach, each once, in order. */
export function outsideOf(client: ApiClient, instituteIds: readonly string[]): string[] {
  return [...new Set(instituteIds)].filter((id) => !reaches(client, id));
}

/** 403 for a publish that names institutes outside the client's; nothing of the request is recorded. */
export function publishOutside(reply: FastifyReply, client: ApiClient, outside: readonly string[]): FastifyReply {
  const which = outside.length === 1 ? `institute ${outside[0]}` : `institutes ${outside.join(', ')}`;
  return reply.code(403).send({
    error: 'forbidden',
    message: `client "${client.name}" may not publish for ${which}; nothing was accepted (its institutes: ${client.instituteIds?.join(', ')})`,
    institutes: outside,
  });
}

/**
 * Which institutes a list may show: the one asked for if the client reaches it, none if it does
 * not (the list is empty, as for an institute with no batches), else the client's own.
 */
export function listScope(client: ApiClient, asked: string | undefined): readonly string[] | undefined {
  if (asked !== undefined) return reaches(client, asked) ? undefined : [];
  return client.instituteIds;
}
