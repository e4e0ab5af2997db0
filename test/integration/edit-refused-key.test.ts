// A rename whose edit-class meets a refused key (HTTP 403 "this API key is suspended", every call
// refused for a while) is not a refusal of the change: the key was refused, not the rename, so no
// batch pays for it (docs/reliability.md, "While the key is refused"), and the rename reaches the class
// once the key works again. (Found by the fault suite: the edit step took every 4xx for a refusal of
// the change, before the check of a 403 could tell key from batch.)
import { expect, it } from 'vitest';
import { publishBatchCreated, publishBatchUpdated } from '../../src/intake/publish.ts';
import { rowOf, untilTerminal } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';

const { h } = useHarnessWithWorker({ env: { CLASSROOM_KEY_PROBE_EVERY: '200ms' } });

it('a rename sent while the key is refused (403) reaches the class once the key works again', async () => {
  await publishBatchCreated(publishDepsOf(h), { batchId: 'k403', name: 'Key 403 old', subject: 'Maths', version: 1 });
  const synced = await untilTerminal(h, 'k403');
  expect(synced.state, 'precondition: synced').toBe('synced');
  h.sandbox.faults.set({ refuseKey: { status: 403, forMs: 1_500 } });
  await publishBatchUpdated(publishDepsOf(h), { batchId: 'k403', name: 'Key 403 new', version: 2 });
  const remoteName = () => h.sandbox.state().classes?.find((c) => c.id === synced.classId)?.name;
  await waitFor(() => remoteName() === 'Key 403 new', 'the rename to reach the class', 20_000);
  // The run records the rename once edit-class has answered: wait for that write, not just the remote.
  const row = await waitFor(async () => {
    const r = await rowOf(h, 'k403');
    return r?.className === 'Key 403 new' && r;
  }, 'the rename to be recorded');
  expect({ state: row?.state, className: row?.className, lastErrorKind: row?.lastErrorKind ?? null }).toEqual({
    state: 'synced',
    className: 'Key 403 new',
    lastErrorKind: null,
  });
  expect(h.sandbox.state().calls.byOperation.editClass?.outcomes.http403, 'the key was refused meanwhile').toBeGreaterThan(0);
});
