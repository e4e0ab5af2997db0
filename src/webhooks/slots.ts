// The dispatcher's claimed messages: up to WEBHOOK_CONCURRENCY being sent, the rest ready to go as a
// slot frees. A message is sent only while its claim outlasts the attempt: one that waited longer
// than a request's timeout is let go (due again at once) rather than sent on a claim about to end.
import type { Logger } from '../logging/logger.ts';
import type { outbox } from '../mapping/index.ts';
import { within } from '../support/timeout.ts';
import type { Attempt } from './deliver.ts';

export interface SlotsDeps {
  /** Undefined: not this dispatcher's to send (no endpoint); the message is let go at once. */
  deliver: (message: outbox.ClaimedMessage) => Attempt | undefined;
  release: (messages: outbox.ClaimedMessage[]) => Promise<void>;
  logger: Logger;
  concurrency: number;
  /** The longest a claimed message may wait for a slot: a request's timeout (see dispatcher.ts). */
  maxWaitMs: number;
  /** Called whenever a slot frees. */
  onFree: () => void;
}

export interface Slots {
  /** Messages claimed and not yet answered: ready or being sent. */
  held(): number;
  /** Adds messages claimed at `claimedAt` and starts as many as there are free slots. */
  take(messages: readonly outbox.ClaimedMessage[], claimedAt: number): void;
  /** Lets go of the ready ones; waits up to `graceMs` for attempts under way to be recorded. */
  drain(graceMs: number): Promise<void>;
}

export function createSlots(deps: SlotsDeps): Slots {
  const ready: { message: outbox.ClaimedMessage; claimedAt: number }[] = [];
  const sending = new Set<Promise<unknown>>();
  const unrecorded = new Set<Promise<void>>();

  const release = (messages: outbox.ClaimedMessage[]) =>
    deps
      .release(messages)
      .catch((error: unknown) => deps.logger.warn({ err: error }, 'could not let go of webhook messages; they are due again once their claim ends'));

  const start = (message: outbox.ClaimedMessage) => {
    const attempt = deps.deliver(message);
    if (!attempt) {
      deps.logger.warn(
        { messageId: message.messageId, instituteId: message.instituteId },
        'claimed a webhook message this worker has no endpoint for; letting it go',
      );
      void release([message]);
      return;
    }
    const { sent, done } = attempt;
    const free = () => {
      sending.delete(slot);
      fill();
      deps.onFree();
    };
    const slot = sent.then(free, free);
    sending.add(slot);
    const recorded = done
      .catch((error: unknown) =>
        deps.logger.warn({ err: error, messageId: message.messageId }, 'could not record a webhook attempt; tried again once its claim ends'),
      )
      .finally(() => unrecorded.delete(recorded));
    unrecorded.add(recorded);
  };

  const fill = () => {
    const late: outbox.ClaimedMessage[] = [];
    const next = () => (sending.size < deps.concurrency ? ready.shift() : undefined);
    for (let item = next(); item; item = next()) {
      if (Date.now() - item.claimedAt > deps.maxWaitMs) late.push(item.message);
      else start(item.message);
    }
    if (late.length > 0) void release(late);
  };

  return {
    held: () => ready.length + sending.size,
    take(messages, claimedAt) {
      for (const message of messages) ready.push({ message, claimedAt });
      fill();
    },
    async drain(graceMs) {
      await release(ready.splice(0).map((r) => r.message));
      await within(Promise.allSettled([...unrecorded]), graceMs);
    },
  };
}
