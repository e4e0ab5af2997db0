// `classroom-sync redeliver MESSAGE_ID… | --failed | --pending`: puts webhook messages back to be
// sent now, under the same message id (`webhook-id`, so an endpoint that deduplicates still can): a
// given-up or delivered one with a fresh retry schedule, a pending one by making its next attempt
// now (after an endpoint comes back, its backlog need not wait out the schedule). Names unknown ids.
import type { Db } from '../mapping/index.ts';
import { outbox } from '../read-model/index.ts';

export type RedeliverRequest = { messageIds: readonly string[] } | { failed: boolean; pending: boolean };

export interface RedeliverIo {
  out(line: string): void;
  err(line: string): void;
}

const consoleIo: RedeliverIo = { out: (line) => console.log(line), err: (line) => console.error(line) };

const PUT_BACK = 'put back; sent again now under the same message id';
const HURRIED = 'pending; its next attempt is now, under the same message id';

/** Returns the exit code: 1 when a named message is not known, else 0. */
export async function runRedeliver(db: Db, request: RedeliverRequest, io: RedeliverIo = consoleIo): Promise<number> {
  if ('failed' in request) {
    const putBack = request.failed ? await outbox.redeliverMessages(db, { failed: true }) : [];
    const hurried = request.pending ? await outbox.hurryPending(db, { all: true }) : [];
    for (const id of putBack) io.out(`${id}: ${PUT_BACK}`);
    for (const id of hurried) io.out(`${id}: ${HURRIED}`);
    if (request.failed) io.out(putBack.length > 0 ? summary(putBack.length) : 'no webhook message is given up (failed); nothing to redeliver');
    if (request.pending) io.out(hurried.length > 0 ? `${hurried.length} pending message(s) due now` : 'no webhook message is pending; nothing to hurry');
    return 0;
  }
  const ids = [...new Set(request.messageIds)];
  const putBack = new Set(await outbox.redeliverMessages(db, { messageIds: ids }));
  // Whatever was not put back is pending already (made due now), or not known at all.
  const rest = ids.filter((id) => !putBack.has(id));
  const hurried = new Set(rest.length > 0 ? await outbox.hurryPending(db, { messageIds: rest }) : []);
  const unknown = rest.filter((id) => !hurried.has(id));
  for (const id of ids) {
    if (putBack.has(id)) io.out(`${id}: ${PUT_BACK}`);
    else if (hurried.has(id)) io.out(`${id}: ${HURRIED}`);
  }
  for (const id of unknown) io.err(`${id}: not a known webhook message id (\`classroom-sync deliveries\` lists them)`);
  if (putBack.size > 0) io.out(summary(putBack.size));
  return unknown.length > 0 ? 1 : 0;
}

const summary = (n: number) => `${n} message(s) put back`;
