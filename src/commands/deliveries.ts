// `classroom-sync deliveries [--failed] [--batch ID] [--json]`: the webhook outbox as operators see
// it, newest first: each message's type, institute, batch, status, attempts, next attempt and last
// answer. Never a message's data: it holds the batch's join link, a secret.
import type { Db } from '../mapping/index.ts';
import { findBatch, formatDeliveries, institutesOf, notKnownUnder, outbox } from '../read-model/index.ts';

export interface DeliveriesRequest {
  /** Only given-up messages (status failed). */
  failed: boolean;
  /** Only this batch's messages (under `instituteId`, which is then always set). */
  batchId?: string | undefined;
  /** Only this institute's messages; every institute's when undefined. */
  instituteId?: string | undefined;
  /** The newest this many. */
  limit: number;
  /** One JSON array of the messages (`[]` when there are none). */
  json: boolean;
}

export interface DeliveriesIo {
  out(line: string): void;
  err(line: string): void;
}

const consoleIo: DeliveriesIo = { out: (line) => console.log(line), err: (line) => console.error(line) };

/** Returns the exit code: 1 when the batch asked for is not known, else 0 (even when nothing is listed). */
export async function runDeliveries(db: Db, request: DeliveriesRequest, io: DeliveriesIo = consoleIo): Promise<number> {
  const { batchId, instituteId } = request;
  if (batchId !== undefined && instituteId !== undefined && !(await findBatch(db, { instituteId, batchId }))) {
    io.err(`batch ${batchId} is ${notKnownUnder(instituteId, await institutesOf(db, batchId))}`);
    return 1;
  }
  const filter: outbox.DeliveryFilter = { limit: request.limit };
  if (request.failed) filter.statuses = ['failed'];
  if (batchId !== undefined) filter.batchId = batchId;
  if (instituteId !== undefined) filter.instituteId = instituteId;
  const messages = await outbox.listDeliveries(db, filter);
  if (request.json) {
    io.out(JSON.stringify(messages));
    return 0;
  }
  if (messages.length === 0) {
    io.out(nothingToShow(request));
    return 0;
  }
  io.out(formatDeliveries(messages));
  if (messages.length === request.limit) io.out(`(the newest ${request.limit} shown; there may be more: raise --limit)`);
  return 0;
}

/** Says plainly that there is nothing, and of what. */
function nothingToShow({ failed, batchId, instituteId }: DeliveriesRequest): string {
  if (batchId !== undefined) {
    const batch = `batch ${batchId} (institute ${instituteId})`;
    return failed ? `${batch} has no given-up (failed) webhook message; nothing to redeliver` : `${batch} has no webhook messages yet`;
  }
  const where = instituteId === undefined ? '' : ` of institute ${instituteId}`;
  return failed ? `no webhook message${where} is given up (failed); nothing to redeliver` : `no webhook messages${where} yet`;
}
