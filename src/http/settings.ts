// What the HTTP server is told by the configuration: the one file of src/http that reads a `Config`
// (lint's `config-through-settings`). src/runtime builds it once.
import type { Account } from '../accounts/types.ts';
import type { Config } from '../config/config.ts';

export interface HttpSettings {
  /** PORT, HOST, and who may call them (API_TOKEN, API_CLIENTS_FILE, DASHBOARD_SESSION_SECRET, TRUST_PROXY). */
  http: Config['http'];
  /** Under it: the sign-in throttle's counts and the fleet's dashboard session secret. */
  queuePrefix: string;
  /** /metrics reads the database on a connection of its own. */
  databaseUrl: string;
  /** /metrics counts batches by account when there are several. */
  accounts: readonly Account[];
  /** Where a batch sent without an institute goes (POST /v1/batches). */
  defaultInstituteId: string;
}

export function httpSettingsOf(config: Pick<Config, 'http' | 'queuePrefix' | 'databaseUrl' | 'accounts' | 'classroom'>): HttpSettings {
  return {
    http: config.http,
    queuePrefix: config.queuePrefix,
    databaseUrl: config.databaseUrl,
    accounts: config.accounts,
    defaultInstituteId: config.classroom.instituteId,
  };
}
