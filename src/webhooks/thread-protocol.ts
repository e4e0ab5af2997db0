// What the worker's main thread and its delivery thread say to each other.
import type { DeliveryOutcome } from './dispatcher.ts';
import type { RoutedAccount } from './routing.ts';
import type { WebhookSettings } from './settings.ts';

/** The thread's start-up data: plain values only (it is copied into the thread). */
export interface ThreadData {
  /** The module the boot file loads (.ts under tsx, .js once built). */
  entry: string;
  databaseUrl: string;
  settings: WebhookSettings;
  accounts: RoutedAccount[];
  logLevel: string;
  pollMs?: number | undefined;
  dispatcherId?: string | undefined;
  /** The thread's scheduling priority on Linux (see ./thread.ts). */
  nice: number;
}

export type ThreadRequest = { kind: 'nudge' } | { kind: 'close'; graceMs: number };

export type ThreadReport =
  | { kind: 'log'; line: string }
  | { kind: 'outcomes'; counts: { outcome: DeliveryOutcome; type: string; n: number }[] }
  /** The dispatcher runs: this worker delivers. */
  | { kind: 'running' }
  | { kind: 'closed' };
