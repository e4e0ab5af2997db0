// Reading the remote's answer: the service's envelope, its body `status` (success is 200 in the body,
// whatever the HTTP status says), and the data under it, each failure classified as what it means.
import type { z } from 'zod';
import { type ClassroomOperation, OutcomeUnknownError, errorForKind, kindForStatus } from './errors.ts';
import { envelopeSchema } from './schemas.ts';
import { parseRetryAfter, transportError } from './transport.ts';

export interface Answer {
  data: unknown;
  body: Record<string, unknown>;
  httpStatus: number;
}

export async function readAnswer(operation: ClassroomOperation, response: Response): Promise<Answer> {
  const httpStatus = response.status;
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    throw transportError(operation, error, 0, httpStatus);
  }
  let body: Record<string, unknown> | undefined;
  try {
    const parsed = envelopeSchema.safeParse(JSON.parse(text));
    if (parsed.success) body = parsed.data;
  } catch {
    body = undefined;
  }
  const said = typeof body?.message === 'string' ? body.message.slice(0, 300) : undefined;
  const remoteMessage = said === undefined ? '' : `: ${said}`;
  if (!response.ok) {
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
    throw errorForKind(kindForStatus(httpStatus), `${operation} failed with HTTP ${httpStatus}${remoteMessage}`, {
      operation,
      httpStatus,
      retryAfterMs,
      remoteMessage: said,
    });
  }
  if (!body) {
    throw new OutcomeUnknownError(`${operation} answered HTTP ${httpStatus} with a body that is not the JSON envelope`, {
      operation,
      httpStatus,
      reason: 'not_envelope',
    });
  }
  if (body.status !== 200) {
    const bodyStatus = typeof body.status === 'number' ? body.status : undefined;
    const kind = bodyStatus === undefined ? 'outcome_unknown' : kindForStatus(bodyStatus);
    const reason = bodyStatus === undefined ? 'body_status_missing' : undefined;
    throw errorForKind(kind, `${operation} answered HTTP ${httpStatus} with body status ${String(body.status)}${remoteMessage}`, {
      operation,
      httpStatus,
      bodyStatus,
      reason,
      remoteMessage: said,
    });
  }
  return { data: body.data, body, httpStatus };
}

export function parseData<T>(operation: ClassroomOperation, answer: Answer, schema: z.ZodType<T>): T {
  const parsed = schema.safeParse(answer.data);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue ? `data.${issue.path.join('.')}` : 'data';
  // A read that returns garbage took no effect; reading again later may well succeed.
  throw new OutcomeUnknownError(`${operation} answered with an unexpected shape at ${where}: ${issue?.message ?? 'invalid'}`, {
    operation,
    httpStatus: answer.httpStatus,
    reason: 'unexpected_shape',
  });
}
