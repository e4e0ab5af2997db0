// How many cases the sampling tests (fast-check properties, model explorations, fuzzers) try: a few
// in the inner loop (`npm test`), many in the full suite (`npm run test:all` sets TEST_DEPTH=full).
// Each such test prints or reports its seed, so a failure in either is replayed with FC_SEED.
export const FULL_DEPTH = process.env.TEST_DEPTH === 'full';

/** `inner` cases in the inner loop, `full` in the full suite. */
export const depth = (inner: number, full: number): number => (FULL_DEPTH ? full : inner);
