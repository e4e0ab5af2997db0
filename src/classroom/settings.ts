// What a classroom client needs to talk to the remote for one account, and how each field is
// checked. The environment (the default account) and the accounts file share these rules, so a
// value is valid or not whichever of the two it comes from. No message ever repeats the value.
import { z } from 'zod';

export interface ClassroomSettings {
  baseUrl: string;
  userId: string;
  apiKey: string;
  xApiKey: string;
  /** The account's home institute: probes and checks read its listing. */
  instituteId: string;
  userAgent: string;
  namespace: string;
  namespaceHeader: string;
  addClassPath: string;
  editClassMethod: 'POST' | 'PUT';
  timeoutMs: number;
  rateLimitPerMinute: number;
  /** The span the remote counts calls over (a minute unless it says otherwise): how late a call may leave its slot. */
  rateLimitWindowMs: number;
  throttlePauseMs: number;
  classNameTemplate: string;
  /** Shortest listed name accepted as the remote's cut of ours (see src/sync/matching.ts). */
  nameMinCut: number;
  /** How often one process asks the remote whether a refused key works again. */
  keyProbeEveryMs: number;
}

const safeToken = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._~-]+$/, 'must be letters, digits, ".", "_", "~" or "-" (no "/", "?", "#" or spaces)');

/**
 * A value sent in an HTTP header (or, for the user id, inside one). A line break would end the
 * header early and start another of the value's choosing; Node refuses such a header only when the
 * first call is made, so each batch would fail then instead of the process refusing to start.
 */
const headerValue = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\r\n\0]*$/, 'must not contain a line break (CR or LF) or NUL: it is sent as an HTTP header value');

export const classroomFields = {
  baseUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  userId: headerValue(200),
  apiKey: z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be the 32-character alphanumeric key issued with the user id'),
  xApiKey: headerValue(500),
  instituteId: safeToken,
  userAgent: headerValue(300),
  namespace: headerValue(200),
  namespaceHeader: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name')
    .transform((h) => h.toLowerCase()),
  addClassPath: z.string().regex(/^\/[A-Za-z0-9/_-]*$/, 'must be a path starting with "/"'),
  editClassMethod: z.enum(['POST', 'PUT']),
  ratePerMinute: z.coerce.number().int().min(1).max(1_000_000),
};
