// Tells the fleet what this dispatcher can send: its row of webhook_routes, written when it starts
// and every ANNOUNCE_EVERY_MS, deleted when it closes. Every dispatcher records a due message
// `skipped` only when no route seen within ROUTE_FRESH_MS covers its institute (outbox.skipUnrouted),
// so a worker without an endpoint never skips what another worker can send.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db } from '../db/client.ts';
import type { Logger } from '../logging/logger.ts';
import { outbox } from '../mapping/index.ts';

/** How often a dispatcher says it runs. */
export const ANNOUNCE_EVERY_MS = 10_000;
/** A route not renewed for this long is ignored: its dispatcher was killed, or cannot reach PostgreSQL. */
export const ROUTE_FRESH_MS = 60_000;
/** A route not renewed for this long is deleted (by the next dispatcher that announces). */
export const ROUTE_FORGET_MS = 10 * 60_000;

export interface AnnounceDeps {
  db: Db;
  logger: Logger;
  /** Default: host, process and a random part. */
  dispatcherId?: string | undefined;
  /** The institutes it has an endpoint for; undefined: every institute. */
  routed?: readonly string[] | undefined;
}

export interface Announcer {
  /** Stops announcing and deletes the row: the fleet no longer counts on this dispatcher. */
  stop(): Promise<void>;
}

/** Starts announcing; undefined when the dispatcher can send nothing (it has nothing to tell, and claims nothing). */
export function startAnnouncing(deps: AnnounceDeps): Announcer | undefined {
  const { db, logger, routed } = deps;
  if (routed?.length === 0) return undefined;
  const dispatcherId = deps.dispatcherId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  let failing = false;
  const announce = () =>
    outbox.announceRoutes(db, dispatcherId, routed, ROUTE_FORGET_MS).then(
      () => {
        if (failing) logger.info('the other workers know again which webhook messages this one sends');
        failing = false;
      },
      (error: unknown) => {
        if (!failing) {
          logger.warn(
            { err: error },
            'cannot tell the other workers which webhook messages this one sends; trying again (after a minute, workers without an endpoint record them skipped)',
          );
        }
        failing = true;
      },
    );
  let last = announce();
  const timer = setInterval(() => {
    last = announce();
  }, ANNOUNCE_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await last;
      await outbox
        .withdrawRoutes(db, dispatcherId)
        .catch((error: unknown) =>
          logger.warn({ err: error }, 'could not withdraw this worker from webhook_routes; the other workers ignore its row within a minute'),
        );
    },
  };
}
