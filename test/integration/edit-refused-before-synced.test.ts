// A change whose edit-class the remote refuses while the batch is still on its way (created: a
// rename recorded during its add-class) is settled as refused, and the run goes on to the link
// steps: the batch ends `synced`, its class keeping its name, and its history records the refusal
// for that change's revision (its row's last_error is cleared by `synced`, as any earlier error).
// (Found by the fault suite, which checks every synced batch against its newest values.)
import { expect, it } from 'vitest';
import { publishBatchCreated, publishBatchUpdated } from '../../src/intake/publish.ts';
import { readTimeline } from '../../src/mapping/index.ts';
import { rowOf } from '../helpers/batches.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { keyOf, messagesOf, runOnce, runToRest } from '../helpers/runs.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h } = useHarness();

it('a rename refused before the batch is synced: synced with its class as it was, the refusal in its history', async () => {
  await publishBatchCreated(publishDepsOf(h), { batchId: 'r1', name: 'Refused 1 old', subject: 'Maths', version: 1 });
  // The run makes the class, then its link-enable meets a 5xx (nothing done): the batch waits in `created`.
  h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'error5xx' });
  await runOnce(h, 'r1');
  expect((await rowOf(h, 'r1'))?.state, 'precondition: created').toBe('created');
  await publishBatchUpdated(publishDepsOf(h), { batchId: 'r1', name: 'Refused 1 new', version: 2 });
  // The rename's edit-class is refused; the link steps go on.
  h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'bodyRejected' });
  const rest = await runToRest(h, 'r1');
  const remote = h.sandbox.state().classes?.find((c) => c.id === rest.classId);
  expect({ state: rest.state, className: rest.className, remoteName: remote?.name, joinLink: remote?.joinMagicLink }).toEqual({
    state: 'synced',
    className: 'Refused 1 old',
    remoteName: 'Refused 1 old',
    joinLink: rest.joinLink,
  });
  const refusals = (await readTimeline(h.runtime.database.db, keyOf(h, 'r1')))?.filter((e) => e.type === 'class_edit_refused');
  expect(refusals?.map((e) => e.detail)).toEqual([{ fields: ['subject', 'name'], revision: 1 }]);
  expect((await messagesOf(h, 'r1')).map((m) => m.type)).toEqual(['batch.synced']);
});
