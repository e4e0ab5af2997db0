// The webhook commands as an operator runs them, against a real endpoint and a worker process that
// delivers: `deliveries` (text and --json), `redeliver MESSAGE_ID… | --failed`, and `history` showing
// a batch's messages. No output ever holds a join link (a message's data does).
import { beforeAll, describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { outbox } from '../../src/mapping/index.ts';
import { untilAllSynced } from '../helpers/batches.ts';
import { killAllChildren, runCli } from '../helpers/cli.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { type Receiver, newSecret, startReceiver, verify } from '../helpers/webhook-receiver.ts';
import { startTestWorker } from './http-helpers.ts';

const { h, defer } = useHarness();
defer(killAllChildren);

const secret = newSecret();
/** Batches whose messages the endpoint refuses for good (410), or answers 503 to (tried again in an hour). */
const refused = new Set<string>();
const unavailable = new Set<string>();
let receiver: Receiver;
/** Every join link stored so far: none may appear in any command's output. */
const joinLinks: string[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
  defer(() => receiver.close());
  receiver.answer = ({ message }) => {
    if (refused.has(message.data.batchId)) return 410;
    return unavailable.has(message.data.batchId) ? 503 : 200;
  };
  const worker = await startTestWorker(h, { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, WEBHOOK_RETRY_SCHEDULE: '1h' });
  defer(() => worker.stop());
});

const cli = (args: string[]) => runCli(args, { env: h.env });
const db = () => h.runtime.database.db;
const institute = () => h.config.classroom.instituteId;

/** Publishes the batches and waits until each is synced; keeps their join links. */
async function syncAll(batchIds: string[]): Promise<void> {
  await publishBatches(
    publishDepsOf(h),
    batchIds.map((batchId) => ({ batchId, name: `Deliveries ${batchId}`, subject: 'Maths' })),
  );
  const rows = await untilAllSynced(h, batchIds);
  expect(rows.every((row) => row.joinLink)).toBe(true);
  joinLinks.push(...rows.map((row) => row.joinLink ?? ''));
}

/** Waits until `batchId`'s one message satisfies `done`. */
function messageOf(batchId: string, done: (m: outbox.DeliveryView) => boolean): Promise<outbox.DeliveryView> {
  return waitFor(async () => {
    const [message, ...more] = await outbox.listDeliveries(db(), { batchId });
    expect(more).toEqual([]);
    return message && done(message) ? message : undefined;
  }, `${batchId}'s message`);
}

/** The cells of each listed message (the lines under the header), split where columns are padded apart. */
function listed(output: string): string[][] {
  return output
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s{2,}/));
}

function expectNoJoinLink(output: string): void {
  for (const link of joinLinks) expect(output).not.toContain(link);
  expect(output).not.toMatch(/joinLink|"data"/);
}

describe('classroom-sync deliveries / redeliver / history', () => {
  let gone: outbox.DeliveryView;
  let fine: outbox.DeliveryView;

  it('deliveries says plainly when there is nothing to show', async () => {
    const [none, noneFailed, json] = await Promise.all([cli(['deliveries']), cli(['deliveries', '--failed']), cli(['deliveries', '--json'])]);
    expect([none.code, none.stdout, none.stderr]).toEqual([0, 'no webhook messages yet\n', '']);
    expect(noneFailed.stdout).toBe('no webhook message is given up (failed); nothing to redeliver\n');
    expect(JSON.parse(json.stdout)).toEqual([]);
  });

  it('a message the endpoint refuses (410) is given up and listed by `deliveries --failed`, in text and JSON, without its data', async () => {
    refused.add('gone-1');
    await syncAll(['gone-1', 'fine-1']);
    gone = await messageOf('gone-1', (m) => m.status === 'failed');
    fine = await messageOf('fine-1', (m) => m.status === 'delivered');
    expect(gone).toMatchObject({ status: 'failed', attempts: 1, lastStatus: 410, type: 'batch.synced' });
    // The endpoint was sent the join link: it is in the message, and nowhere in what the commands print.
    const sent = receiver.byId().get(gone.messageId);
    expect(sent).toHaveLength(1);
    expect(joinLinks).toContain(sent?.[0]?.message.data.joinLink);

    const [text, json] = await Promise.all([cli(['deliveries', '--failed']), cli(['deliveries', '--failed', '--json'])]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^MESSAGE ID\s+TYPE\s+INSTITUTE\s+BATCH\s+STATUS\s+ATTEMPTS\s+NEXT ATTEMPT\s+LAST ANSWER\n/);
    expect(listed(text.stdout)).toEqual([
      [gone.messageId, 'batch.synced', institute(), 'gone-1', 'failed', '1', '-', 'HTTP 410: the endpoint refused the message; not tried again'],
    ]);
    expectNoJoinLink(text.stdout);

    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        messageId: gone.messageId,
        type: 'batch.synced',
        instituteId: institute(),
        batchId: 'gone-1',
        status: 'failed',
        attempts: 1,
        occurredAt: expect.any(String),
        lastAttemptAt: expect.any(String),
        lastStatus: 410,
        lastError: expect.stringMatching(/^HTTP 410/),
        nextAttemptAt: null,
        deliveredAt: null,
      },
    ]);
    expectNoJoinLink(json.stdout);
  });

  it('deliveries without --failed lists every status, newest first; --batch one batch, --limit the newest', async () => {
    const [all, oneBatch, newestOne, limited, unknown, nothingFailed] = await Promise.all([
      cli(['deliveries']),
      cli(['deliveries', '--batch', 'fine-1', '--json']),
      cli(['deliveries', '--limit', '1', '--json']),
      cli(['deliveries', '--limit', '1']),
      cli(['deliveries', '--batch', 'no-such-batch']),
      cli(['deliveries', '--batch', 'fine-1', '--failed']),
    ]);
    const rows = listed(all.stdout);
    expect(rows).toContainEqual([fine.messageId, 'batch.synced', institute(), 'fine-1', 'delivered', '1', '-', 'HTTP 200']);
    expect(rows).toContainEqual([gone.messageId, 'batch.synced', institute(), 'gone-1', 'failed', '1', '-', expect.stringMatching(/^HTTP 410/)]);
    expect(rows).toHaveLength(2);
    const ids = rows.map(([id]) => id);
    expectNoJoinLink(all.stdout);

    const one = JSON.parse(oneBatch.stdout) as outbox.DeliveryView[];
    expect(one.map((m) => [m.messageId, m.status, m.lastStatus])).toEqual([[fine.messageId, 'delivered', 200]]);
    // Newest first: --limit 1 keeps the first line of the full listing.
    const newest = JSON.parse(newestOne.stdout) as outbox.DeliveryView[];
    expect(newest.map((m) => m.messageId)).toEqual([ids[0]]);
    expect(limited.stdout).toMatch(/newest 1 shown; there may be more: raise --limit/);

    expect([unknown.code, unknown.stderr]).toEqual([1, `batch no-such-batch is not known under institute ${institute()}\n`]);
    expect(nothingFailed.stdout).toBe(`batch fine-1 (institute ${institute()}) has no given-up (failed) webhook message; nothing to redeliver\n`);
  });

  it('redeliver MESSAGE_ID sends it again under the same webhook-id; it verifies, and deliveries shows it delivered', async () => {
    refused.delete('gone-1');
    const result = await cli(['redeliver', gone.messageId]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(result.stdout).toBe(`${gone.messageId}: put back; sent again now under the same message id\n1 message(s) put back\n`);
    const [first, again] = await waitFor(() => {
      const requests = receiver.byId().get(gone.messageId) ?? [];
      return requests.length >= 2 ? requests : undefined;
    }, 'the message sent again');
    expect(again?.headers['webhook-id']).toBe(gone.messageId);
    expect(() => verify(secret, again!)).not.toThrow();
    expect(() => verify(newSecret(), again!)).toThrow();
    expect(again?.body).toBe(first?.body);
    expect(again?.message).toMatchObject({ type: 'batch.synced', data: { batchId: 'gone-1', state: 'synced' } });

    await messageOf('gone-1', (m) => m.status === 'delivered');
    const [json, text] = await Promise.all([cli(['deliveries', '--batch', 'gone-1', '--json']), cli(['deliveries', '--batch', 'gone-1'])]);
    expect(JSON.parse(json.stdout)).toMatchObject([{ messageId: gone.messageId, status: 'delivered', attempts: 1, lastStatus: 200, lastError: null }]);
    expect(listed(text.stdout)).toEqual([[gone.messageId, 'batch.synced', institute(), 'gone-1', 'delivered', '1', '-', 'HTTP 200']]);
    expectNoJoinLink(text.stdout);
  });

  it('redeliver --failed puts every given-up message back; a named pending one, and --pending, make it due now; an unknown id exits 1', async () => {
    refused.add('gone-2').add('gone-3');
    unavailable.add('slow-1');
    await syncAll(['gone-2', 'gone-3', 'slow-1']);
    const gone2 = await messageOf('gone-2', (m) => m.status === 'failed');
    const gone3 = await messageOf('gone-3', (m) => m.status === 'failed');
    // Answered 503: tried again in an hour, so it is pending with a next attempt.
    const slow = await messageOf('slow-1', (m) => m.status === 'pending' && m.attempts === 1 && m.lastStatus === 503);

    refused.clear();
    // Listing slow-1's message while the given-up ones are put back: that touches no pending message.
    const [pending, result] = await Promise.all([cli(['deliveries', '--batch', 'slow-1']), cli(['redeliver', '--failed'])]);
    expect(listed(pending.stdout)).toEqual([
      [slow.messageId, 'batch.synced', institute(), 'slow-1', 'pending', '1', slow.nextAttemptAt?.toISOString(), 'HTTP 503'],
    ]);
    expect(result.code).toBe(0);
    expect(
      result.stdout
        .split('\n')
        .filter((line) => line.startsWith('msg_'))
        .sort(),
    ).toEqual([gone2.messageId, gone3.messageId].map((id) => `${id}: put back; sent again now under the same message id`).sort());
    expect(result.stdout).toMatch(/^2 message\(s\) put back$/m);
    for (const id of [gone2.messageId, gone3.messageId]) {
      await waitFor(() => (receiver.byId().get(id)?.length ?? 0) >= 2 || undefined, `${id} sent again`);
    }
    await messageOf('gone-2', (m) => m.status === 'delivered');
    await messageOf('gone-3', (m) => m.status === 'delivered');
    const [nothing, noneListed, mixed, bare, both] = await Promise.all([
      cli(['redeliver', '--failed']),
      cli(['deliveries', '--failed']),
      cli(['redeliver', 'msg_nosuchmessage', slow.messageId]),
      cli(['redeliver']),
      cli(['redeliver', '--failed', gone.messageId]),
    ]);
    expect([nothing.code, nothing.stdout]).toEqual([0, 'no webhook message is given up (failed); nothing to redeliver\n']);
    expect(noneListed.stdout).toBe('no webhook message is given up (failed); nothing to redeliver\n');
    expect(mixed.code).toBe(1);
    expect(mixed.stderr).toBe('msg_nosuchmessage: not a known webhook message id (`classroom-sync deliveries` lists them)\n');
    // Named while pending (its next attempt an hour away): tried again now, under its id.
    expect(mixed.stdout).toBe(`${slow.messageId}: pending; its next attempt is now, under the same message id\n`);
    await waitFor(() => receiver.byId().get(slow.messageId)?.length === 2 || undefined, 'slow-1 sent again');
    // Its 503 recorded: the next attempt an hour away again (an attempt counts from its claim).
    await messageOf('slow-1', (m) => m.attempts === 2 && (m.nextAttemptAt?.getTime() ?? 0) - (m.lastAttemptAt?.getTime() ?? 0) > 30 * 60_000);
    // The endpoint is back: --pending sends the whole backlog now.
    unavailable.clear();
    const hurried = await cli(['redeliver', '--pending']);
    expect(hurried.stdout).toBe(`${slow.messageId}: pending; its next attempt is now, under the same message id\n1 pending message(s) due now\n`);
    await messageOf('slow-1', (m) => m.status === 'delivered' && m.attempts === 3);
    expect((await cli(['redeliver', '--pending'])).stdout).toBe('no webhook message is pending; nothing to hurry\n');

    expect([bare.code, bare.stderr]).toEqual([2, expect.stringMatching(/name at least one message id, or pass --failed or --pending/)]);
    expect([both.code, both.stderr]).toEqual([2, expect.stringMatching(/not both/)]);
  });

  it("history BATCH shows the batch's webhook messages, in text and JSON, without the join link", async () => {
    const [text, json] = await Promise.all([cli(['history', 'gone-1']), cli(['history', 'gone-1', '--json'])]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/transition link_enabled → synced/);
    const section = text.stdout.slice(text.stdout.indexOf('\nwebhook messages\n'));
    expect(section).toMatch(/^\s+TYPE\s+MESSAGE ID\s+STATUS\s+ATTEMPTS\s+NEXT ATTEMPT\s+LAST ANSWER$/m);
    expect(section).toMatch(new RegExp(`^\\s+batch\\.synced\\s+${gone.messageId}\\s+delivered\\s+1\\s+-\\s+HTTP 200$`, 'm'));
    expectNoJoinLink(text.stdout);

    const entries = JSON.parse(json.stdout) as Array<{ type: string; toState?: string; webhook?: outbox.DeliveryView }>;
    const webhooks = entries.filter((e) => e.type === 'webhook');
    expect(webhooks).toMatchObject([{ webhook: { messageId: gone.messageId, type: 'batch.synced', status: 'delivered', attempts: 1, lastStatus: 200 } }]);
    // Oldest first: the message comes after the transition that wrote it.
    const synced = entries.findIndex((e) => e.type === 'transition' && e.toState === 'synced');
    expect(synced).toBeGreaterThanOrEqual(0);
    expect(entries.indexOf(webhooks[0]!)).toBeGreaterThan(synced);
    expectNoJoinLink(json.stdout);
  });
});
