// Seeded randomness, so a sandbox started with the same seed replays the same ids and faults.

/** mulberry32: tiny, fast, good enough for test traffic; not for secrets. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Independent streams from one seed: drawing a latency must not shift the next fault decision. */
export function deriveSeed(seed: number, stream: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, stream * 2 + 1) + stream * 0x85ebca6b) >>> 0;
}

/** `length` lower-case hex characters from `next`. */
export function randomHex(next: () => number, length: number): string {
  let out = '';
  while (out.length < length)
    out += Math.floor(next() * 0x10000)
      .toString(16)
      .padStart(4, '0');
  return out.slice(0, length);
}

/** A seed for runs that did not ask for one; reported in the state so the run can be replayed. */
export function freshSeed(): number {
  return Math.floor(Math.random() * 0xffffffff) >>> 0;
}
