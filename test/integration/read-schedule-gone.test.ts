// A class gone from the remote (deleted by someone, as the fault suite does to 4 % of classes) is not
// lag: its batch re-reads it at doubling ages until the read-lag patience ends, each 404 raising the
// account's read delay. Once the verdict is in (class_unknown), those raises are taken back: every
// later batch of the account would otherwise wait up to the cap (10 × SYNC_READ_LAG) before its
// first read, with a remote that answers at once.
import { expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { lagKey } from '../../src/ratelimit/keys.ts';
import { createLagMonitor } from '../../src/sync/lag-monitor.ts';
import { untilAllSynced, untilTerminal } from '../helpers/batches.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';

const READ_LAG_MS = 200;
const { h, syncWorker } = useHarness({ env: { SYNC_READ_LAG: `${READ_LAG_MS}ms` } });

it('one class gone from the remote does not put every later batch of the account at the cap of the read schedule', async () => {
  const account = h.config.accounts[0]!;
  const monitor = createLagMonitor({
    redis: h.runtime.redis,
    key: lagKey({ queuePrefix: h.config.queuePrefix, classroom: account.classroom }),
    maxDelayMs: 10 * READ_LAG_MS,
  });
  // The class of batch `gone-0` is deleted on the remote as its first edit-class arrives.
  let deleted = false;
  const stop = h.sandbox.onRequest((operation, request) => {
    if (operation !== 'editClass' || deleted || !request.classId) return;
    deleted = h.sandbox.store.delete(request.classId);
  });
  syncWorker(h.runtime);
  await publishBatches(publishDepsOf(h), [{ batchId: 'gone-0', name: 'Gone 0', subject: 'Music' }]);
  expect(await untilTerminal(h, 'gone-0', 30_000)).toMatchObject({ state: 'failed', lastErrorKind: 'class_unknown' });
  stop();
  expect(deleted).toBe(true);

  // The remote shows every other write at once (no read lag at all).
  const notFoundBefore = h.sandbox.state({ classes: false }).calls.byOperation.editClass?.outcomes.notFound ?? 0;
  await publishBatches(
    publishDepsOf(h),
    Array.from({ length: 3 }, (_, i) => ({ batchId: `after-${i}`, name: `After ${i}`, subject: 'Music' })),
  );
  await untilAllSynced(h, ['after-0', 'after-1', 'after-2'], 30_000);
  expect(h.sandbox.state({ classes: false }).calls.byOperation.editClass?.outcomes.notFound ?? 0).toBe(notFoundBefore);

  // What the 404s of one gone class taught the account: the delay every later batch's first read waits.
  const delay = await monitor.readDelay('class');
  expect(delay, `the account's class read delay, against the cap of ${10 * READ_LAG_MS} ms`).toBeLessThanOrEqual(READ_LAG_MS);
});
