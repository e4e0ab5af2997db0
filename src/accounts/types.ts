// An account: one set of credentials the remote issued to the integrator, for the institutes it
// serves. Each has its own rate limit and its own credentials breaker (see src/accounts/remotes.ts).
import type { ClassroomSettings } from '../classroom/settings.ts';
import type { WebhookEndpoint } from '../webhooks/settings.ts';

export interface Account {
  /** Names the account in logs, metrics (label `account`), `status` and `check`. */
  readonly name: string;
  /** The institutes whose batches this account syncs; the first is its home institute. */
  readonly instituteIds: readonly string[];
  /**
   * Syncs batches of any institute, not only those listed: the CLASSROOM_* account when there is no
   * accounts file (one key for every institute, as before accounts existed).
   */
  readonly anyInstitute?: boolean;
  /** How it talks to the remote; `classroom.instituteId` is the home institute. */
  readonly classroom: Readonly<ClassroomSettings>;
  /** Where this account's institutes' webhook messages go (`webhookUrl`, `webhookSecret`); else WEBHOOK_URL. */
  readonly webhook?: Readonly<WebhookEndpoint>;
}

/** The name of the account made from the CLASSROOM_* settings. */
export const DEFAULT_ACCOUNT = 'default';
