// Nothing the integrator should hear about is lost: real worker processes deliver to a real HTTP
// endpoint that is down at first, answers 500 to some messages and never answers one, while the
// first worker is SIGKILLed mid-run and a second takes over. Every synced batch's batch.synced must
// arrive, verify with the reference library, carry the stored class id and link, and every attempt
// of one event must carry the event's one message id.
import { expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { rowsOf, untilAllSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { newSecret, startReceiver, verify } from '../helpers/webhook-receiver.ts';
import { WorkerProcess, freePort } from './processes.ts';
import { Standbys } from './standbys.ts';

const N = 40;
const { h, defer } = useHarness({ env: { SYNC_CONCURRENCY: '4' } });
// Filled once the harness is up. The first worker loads its modules meanwhile (standbys.ts); the
// second starts cold: it waits for the killed worker's leases (SYNC_LEASE) whatever it does, and a
// standby loading beside the first worker's start would only slow that.
const env: Record<string, string> = {};
const standbys = new Standbys(env, { ready: 1, total: 1 });

/** A worker process taken from the standbys, once it says it started. */
async function startWorker(what: string): Promise<WorkerProcess> {
  const worker = new WorkerProcess(env, () => {}, standbys);
  await waitFor(
    () => {
      if (!worker.alive) throw new Error(`${what} exited before it started: ${worker.stderrTail}`);
      return worker.started;
    },
    what,
    60_000,
  );
  return worker;
}

it('every batch.synced arrives once per event id, verified, with the stored class and link, through an outage, 500s, a hang and a killed worker', async () => {
  const workers: WorkerProcess[] = [];
  defer(async () => {
    for (const worker of workers) worker.kill9();
    await standbys.close();
  });
  const port = await freePort();
  const receiver = await startReceiver({ port, down: true });
  defer(() => receiver.close());
  const ok = new Set<string>();
  // Every fourth batch's message is refused once; one message is never answered the first time.
  receiver.answer = (request, seenBefore) => {
    const index = Number(String(request.message.data.batchId).split('-')[1]);
    const answer = seenBefore > 0 ? 200 : index === 7 ? 'hang' : index % 4 === 0 ? 500 : 200;
    if (answer === 200) ok.add(request.headers['webhook-id'] ?? '');
    return answer;
  };
  const secret = newSecret();
  Object.assign(env, {
    ...h.env,
    PORT: '0',
    HOST: '127.0.0.1',
    RECONCILE_EVERY: '0',
    LOG_LEVEL: 'info',
    WEBHOOK_URL: receiver.url,
    WEBHOOK_SECRET: secret,
    WEBHOOK_TIMEOUT: '1s',
    WEBHOOK_RETRY_SCHEDULE: '500ms',
  });
  // Calls slow enough that the kill finds batches mid-run.
  h.sandbox.faults.set({ latencyMs: 60 });
  const first = await startWorker('the first worker');
  workers.push(first);
  const batches = Array.from({ length: N }, (_, i) => ({ batchId: `wh-${i}`, name: `Webhook class ${String(i).padStart(3, '0')}`, subject: 'Maths' }));
  await publishBatches(publishDepsOf(h), batches);

  // The endpoint comes up once the first messages were refused (connection refused), and the worker
  // is killed mid-run: some batches synced and told, some mid-delivery, the rest not synced yet.
  const synced = async (n: number) => (await rowsOf(h)).filter((r) => r.state === 'synced').length >= n || undefined;
  await waitFor(() => synced(5), 'some batches synced', 60_000);
  await receiver.listen();
  await waitFor(() => synced(15), 'more batches synced', 60_000);
  first.kill9();
  await first.exited;
  expect(
    (await rowsOf(h)).some((r) => r.state !== 'synced'),
    'the kill came mid-run',
  ).toBe(true);
  const second = await startWorker('the second worker');
  workers.push(second);

  const rows = await untilAllSynced(h, { count: N }, 90_000);
  await waitFor(() => ok.size >= N || undefined, 'every message delivered', 90_000);

  const requests = receiver.received;
  expect(
    requests.some((r) => r.message.data.batchId === 'wh-7' && receiver.received.filter((q) => q.headers['webhook-id'] === r.headers['webhook-id']).length > 1),
  ).toBe(true);
  for (const row of rows) {
    const mine = requests.filter((r) => r.message.data.batchId === row.batchId);
    const ids = new Set(mine.map((r) => r.headers['webhook-id']));
    expect(ids.size, `${row.batchId}: one message id for its one event`).toBe(1);
    expect(ok.has([...ids][0] ?? ''), `${row.batchId}: delivered`).toBe(true);
    for (const request of mine) {
      expect(() => verify(secret, request), `${row.batchId} verifies`).not.toThrow();
      expect(request.message).toMatchObject({
        type: 'batch.synced',
        data: { batchId: row.batchId, classId: row.classId, joinLink: row.joinLink, state: 'synced' },
      });
    }
  }
  expect(h.sandbox.state().classCount).toBe(N);
  await second.stop();
}, 240_000);
