// Writes attempts' outcomes to the outbox in batches, one statement each: a batch goes once `batch`
// outcomes wait or the first has waited WAIT_MS, and one write is out at a time (what arrives
// meanwhile goes in the next). A statement costs PostgreSQL and this process about as much as the
// rows it writes, so one per message was most of delivery's cost; the wait costs nothing, since a
// message stays claimed until its outcome is written and its slot is already free.
import type { Db } from '../db/client.ts';
import { outbox } from '../mapping/index.ts';

export type RecordAttempt = (message: outbox.AttemptEntry['message'], record: outbox.AttemptRecord) => Promise<outbox.WebhookStatus | undefined>;

/** The longest an outcome waits for others to share its statement. */
const WAIT_MS = 20;

interface Waiting extends outbox.AttemptEntry {
  resolve: (status: outbox.WebhookStatus | undefined) => void;
  reject: (error: unknown) => void;
}

export function createAttemptRecorder(db: Db, options: { batch: number }): RecordAttempt {
  let waiting: Waiting[] = [];
  let writing = false;
  let timer: NodeJS.Timeout | undefined;

  const write = async () => {
    clearTimeout(timer);
    timer = undefined;
    writing = true;
    const entries = waiting;
    waiting = [];
    try {
      const statuses = await outbox.recordAttempts(db, entries);
      for (const [i, entry] of entries.entries()) entry.resolve(statuses[i]);
    } catch (error) {
      // Each caller hears it; its message stays claimed until the hold ends, then is tried again.
      for (const entry of entries) entry.reject(error);
    }
    writing = false;
    schedule();
  };

  const schedule = () => {
    if (writing || waiting.length === 0) return;
    if (waiting.length >= options.batch) void write();
    else timer ??= setTimeout(write, WAIT_MS);
  };

  return (message, record) =>
    new Promise((resolve, reject) => {
      waiting.push({ message, record, resolve, reject });
      schedule();
    });
}
