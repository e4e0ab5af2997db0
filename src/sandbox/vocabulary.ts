// The sandbox's words that the CLI needs to describe its flags: kept apart from the schemas
// (zod) so that `classroom-sync --help` and `--version` load neither.

export const OPERATIONS = ['addClass', 'editClass', 'getClass', 'listClasses'] as const;
export type SandboxOperation = (typeof OPERATIONS)[number];

/** In decision order; a config's probabilities are walked in this order with one draw. */
export const FAULT_KINDS = [
  'error5xx', // HTTP 500/502/503 before anything is stored
  'throttle', // HTTP 429 with Retry-After, nothing stored
  'throttleNoRetryAfter', // HTTP 429 without headers (as the live service), nothing stored
  'bodyRejected', // HTTP 200 with body {status:400}, nothing stored
  'error5xxAfterStore', // the call takes effect, then HTTP 500
  'lostResponse', // the call takes effect, then the socket is destroyed with no response
  'hang', // the call takes effect, then no response until hangMs, the client gives up, or close
  'bodyError', // the call takes effect, then HTTP 200 with body {status:500}
  'nonJsonBody', // the call takes effect, then HTTP 200 with an HTML page
  'truncatedBody', // the call takes effect, then HTTP 200 with half a JSON document
  // The call takes effect, then HTTP 200 whose class ids carry path characters: `data._id` (and
  // each listed item's `_id`) becomes "../<id>". Not in `mixedFaultRates`: ask for it by name.
  'unsafeId',
  // No answer at all; the call takes effect only `lateEffectMs` later, when the client has given
  // up (a request the remote had queued), then the connection is dropped. Not in
  // `mixedFaultRates`: ask for it by name.
  'lateEffect',
] as const;

/** How add-class may rewrite the case of a stored name (`--name-case`). */
export const NAME_CASES = ['lower', 'upper'] as const;
