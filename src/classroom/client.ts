// The remote Classroom Management Service. Four operations, every header of the spec's section 5,
// one timeout per request and no retries: retrying is the queue's job, and only the state machine
// knows whether a retry could create a second class.
import ky, { type KyInstance } from 'ky';
import { z } from 'zod';
import type { Config } from '../config.ts';
import {
  type ClassroomError,
  type ClassroomOperation,
  NotSentError,
  OutcomeUnknownError,
  RejectedError,
  errorForKind,
  kindForStatus,
} from './errors.ts';
import { describeUnsafeId, idSegment, isSafeId } from './ids.ts';
import { type ClassRecord, type InstituteListing, classRecordSchema, envelopeSchema, listingSchema } from './schemas.ts';
import { parseRetryAfter, transportError } from './transport.ts';

export type ClassroomSettings = Config['classroom'];

export interface AddClassInput {
  name: string;
  subject: string;
  instituteId: string;
  /** Extra class fields from the batch event, sent as they are. */
  extra?: Record<string, unknown>;
}

export interface CallRecord {
  operation: ClassroomOperation;
  outcome: 'ok' | ClassroomError['kind'];
  httpStatus: number | undefined;
  bodyStatus: number | undefined;
  durationMs: number;
  /** The failure's message (safe to store: never credentials or join links). */
  error?: string | undefined;
}

export interface ClassroomHooks {
  /** Awaited before every request (the shared rate limit). A throw means the request is not sent. */
  beforeCall?: (operation: ClassroomOperation) => Promise<void>;
  /** Told about every finished call (metrics, audit). Must not throw. */
  afterCall?: (call: CallRecord) => void;
}

export interface CallOptions {
  /**
   * Runs after the rate-limit slot is granted and right before the request leaves. The sync
   * machine re-checks its lease here; whatever it throws propagates unchanged (nothing was sent).
   */
  beforeSend?: () => Promise<void>;
  /** Told about this call once it finished (the batch's audit trail). Must not throw. */
  observe?: (call: CallRecord) => void;
}

export interface ClassroomClient {
  addClass(input: AddClassInput, options?: CallOptions): Promise<{ classId: string; raw: unknown }>;
  enableJoinLink(classId: string, options?: CallOptions): Promise<void>;
  getClass(classId: string, options?: CallOptions): Promise<ClassRecord>;
  listClasses(instituteId: string, query?: { searchTerm?: string }, options?: CallOptions): Promise<InstituteListing>;
}

interface Answer {
  data: unknown;
  body: Record<string, unknown>;
  httpStatus: number;
}

export function createClassroomClient(settings: ClassroomSettings, hooks: ClassroomHooks = {}): ClassroomClient {
  const http = createHttp(settings);

  /** `interpret` runs inside the call, so an answer we cannot use is reported as the failure it is. */
  async function call<T>(
    operation: ClassroomOperation,
    send: (signal: AbortSignal) => Promise<Response>,
    options: CallOptions = {},
    interpret: (answer: Answer) => T,
  ): Promise<T> {
    if (hooks.beforeCall) {
      try {
        await hooks.beforeCall(operation);
      } catch (error) {
        throw new NotSentError(`${operation} not sent: ${(error as Error).message}`, { operation, cause: error });
      }
    }
    await options.beforeSend?.();
    const report = (record: CallRecord) => {
      hooks.afterCall?.(record);
      options.observe?.(record);
    };
    const started = performance.now();
    let httpStatus: number | undefined;
    let bodyStatus: number | undefined;
    try {
      // One signal for headers and body alike: a server that stalls mid-body is a timeout too.
      const signal = AbortSignal.timeout(settings.timeoutMs);
      const response = await send(signal).catch((error: unknown) => {
        throw transportError(operation, error, settings.timeoutMs);
      });
      httpStatus = response.status;
      const answer = await readAnswer(operation, response);
      bodyStatus = typeof answer.body.status === 'number' ? answer.body.status : undefined;
      const result = interpret(answer);
      report({ operation, outcome: 'ok', httpStatus, bodyStatus, durationMs: performance.now() - started });
      return result;
    } catch (error) {
      const classified = error as ClassroomError;
      report({
        operation,
        outcome: classified.kind,
        httpStatus: classified.httpStatus ?? httpStatus,
        bodyStatus: classified.bodyStatus ?? bodyStatus,
        durationMs: performance.now() - started,
        error: classified.message,
      });
      throw error;
    }
  }

  return {
    async addClass(input, options) {
      const json = { ...input.extra, name: input.name, subject: input.subject, instituteId: input.instituteId };
      return call('addClass', (signal) => http.post(relative(settings.addClassPath), { json, signal }), options, (answer) => {
        const classId = pickClassId(answer);
        if (!isSafeId(classId)) {
          // The class was probably created, but we cannot use this id: the caller must resolve by reading.
          throw new OutcomeUnknownError(`addClass answered with an unusable class id: ${describeUnsafeId(classId)}`, {
            operation: 'addClass',
            httpStatus: answer.httpStatus,
          });
        }
        return { classId, raw: answer.data };
      });
    },

    async enableJoinLink(classId, options) {
      assertSafeId('editClass', classId);
      await call(
        'editClass',
        (signal) =>
          http(relative('/teacher/editClass'), {
            method: settings.editClassMethod,
            json: { classId, enableJoinMagicLink: true },
            signal,
          }),
        options,
        () => undefined,
      );
    },

    async getClass(classId, options) {
      assertSafeId('getClass', classId);
      return call(
        'getClass',
        (signal) => http.get(`user/v2/classes/${idSegment(classId)}`, { searchParams: { full: 'true' }, signal }),
        options,
        (answer) => parseData('getClass', answer, classRecordSchema),
      );
    },

    async listClasses(instituteId, query = {}, options) {
      assertSafeId('listClasses', instituteId);
      const searchParams: Record<string, string> = {};
      if (query.searchTerm) searchParams.searchTerm = query.searchTerm;
      return call(
        'listClasses',
        (signal) => http.get(`institutes/${idSegment(instituteId)}/classes`, { searchParams, signal }),
        options,
        (answer) => parseData('listClasses', answer, listingSchema),
      );
    },
  };
}

function createHttp(settings: ClassroomSettings): KyInstance {
  const basic = Buffer.from(`${settings.userId}:${settings.apiKey}`).toString('base64');
  return ky.create({
    prefixUrl: settings.baseUrl,
    timeout: false,
    retry: 0,
    throwHttpErrors: false,
    headers: {
      authorization: `Basic ${basic}`,
      'x-api-key': settings.xApiKey,
      'user-agent': settings.userAgent,
      [settings.namespaceHeader]: settings.namespace,
      accept: 'application/json',
      'content-type': 'application/json',
    },
  });
}

/** ky's prefixUrl wants paths without a leading slash. */
function relative(path: string): string {
  return path.replace(/^\/+/, '');
}

async function readAnswer(operation: ClassroomOperation, response: Response): Promise<Answer> {
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
  const remoteMessage = typeof body?.message === 'string' ? `: ${body.message.slice(0, 300)}` : '';
  if (!response.ok) {
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
    throw errorForKind(kindForStatus(httpStatus), `${operation} failed with HTTP ${httpStatus}${remoteMessage}`, {
      operation,
      httpStatus,
      retryAfterMs,
    });
  }
  if (!body) {
    throw new OutcomeUnknownError(`${operation} answered HTTP ${httpStatus} with a body that is not the JSON envelope`, {
      operation,
      httpStatus,
    });
  }
  if (body.status !== 200) {
    const bodyStatus = typeof body.status === 'number' ? body.status : undefined;
    const kind = bodyStatus === undefined ? 'outcome_unknown' : kindForStatus(bodyStatus);
    throw errorForKind(kind, `${operation} answered HTTP ${httpStatus} with body status ${String(body.status)}${remoteMessage}`, {
      operation,
      httpStatus,
      bodyStatus,
    });
  }
  return { data: body.data, body, httpStatus };
}

function pickClassId(answer: Answer): unknown {
  const data = answer.data as { _id?: unknown } | undefined;
  return data && typeof data === 'object' && '_id' in data ? data._id : answer.body._id;
}

function parseData<T>(operation: ClassroomOperation, answer: Answer, schema: z.ZodType<T>): T {
  const parsed = schema.safeParse(answer.data);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue ? `data.${issue.path.join('.')}` : 'data';
  // A read that returns garbage took no effect; reading again later may well succeed.
  throw new OutcomeUnknownError(`${operation} answered with an unexpected shape at ${where}: ${issue?.message ?? 'invalid'}`, {
    operation,
    httpStatus: answer.httpStatus,
  });
}

function assertSafeId(operation: ClassroomOperation, id: string): void {
  if (!isSafeId(id)) throw new RejectedError(`${operation} not sent: ${describeUnsafeId(id)}`, { operation });
}
