// Class and institute ids are opaque: the spec calls them UUIDs, the live service uses 24-hex
// ObjectIds. We only insist they are safe to put in a URL path segment and a log line.
const SAFE_ID = /^[A-Za-z0-9._~-]{1,128}$/;

export function isSafeId(value: unknown): value is string {
  return typeof value === 'string' && SAFE_ID.test(value) && value !== '.' && value !== '..';
}

export function describeUnsafeId(value: unknown): string {
  if (typeof value !== 'string') return `expected a string id, got ${value === null ? 'null' : typeof value}`;
  if (value.length === 0 || value.length > 128) return `id length ${value.length} is outside 1..128`;
  return `id ${JSON.stringify(value.slice(0, 40))} contains characters other than letters, digits, ".", "_", "~" or "-"`;
}

export function idSegment(id: string): string {
  return encodeURIComponent(id);
}
