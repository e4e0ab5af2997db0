// A scope of one test's own, for tests that run side by side (describe.concurrent / it.concurrent):
// useHarnessPerTest closes what was opened in an afterEach, which cannot tell one running test's
// harness from another's. Here the test's own context closes it when that test finishes:
//
//   it.concurrent('…', async ({ onTestFinished }) => {
//     const own = ownScope(onTestFinished);
//     const h = await own.harness({ env: { … } });
//
// The same teardown as use-harness.ts: what was deferred, newest first, then the harness, failing the
// test when something was left open on it. Tests that share module state (killAllChildren's list of
// CLI children, a receiver, a logger) must not run side by side.
import type { OnTestFinishedHandler } from 'vitest';
import { type PerTestScope, Teardown } from './use-harness.ts';

export function ownScope(onTestFinished: (fn: OnTestFinishedHandler) => void): PerTestScope {
  const teardown = new Teardown();
  onTestFinished(() => teardown.close());
  return { ...teardown.scope(), harness: (options = {}) => teardown.harness(options) };
}
