// What a configuration is allowed to do but an operator should hear about: a world-readable file of
// keys, a key sent where anyone on the network path can read it, every proxy hop believed about the
// caller's address. Said once when a worker starts (at warn, naming the setting, never a key) and by
// `check`; neither stops anything.
import { BlockList, isIP } from 'node:net';
import type { Account } from '../accounts/types.ts';
import { SANDBOX_DEFAULTS } from './env.ts';
import type { Config } from './config.ts';
import { looseFilePermissions } from './file-permissions.ts';

export interface ConfigWarning {
  /** What it is about, in a word or two (the subject of a `check` line). */
  subject: 'accounts file' | 'clients file' | 'remote address' | 'trusted proxies';
  /** One sentence: the setting, what is wrong, and the fix. */
  message: string;
}

export function configWarnings(
  config: Pick<Config, 'accounts' | 'accountsFile'> & { http?: Pick<Config['http'], 'clientsFile' | 'trustProxy'> },
): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  const loose = config.accountsFile === undefined ? undefined : looseFilePermissions(config.accountsFile);
  if (loose) warnings.push({ subject: 'accounts file', message: `CLASSROOM_ACCOUNTS_FILE: ${loose}` });
  const clientsFile = config.http?.clientsFile;
  const looseClients = clientsFile === undefined ? undefined : looseFilePermissions(clientsFile);
  if (looseClients) warnings.push({ subject: 'clients file', message: `API_CLIENTS_FILE: ${looseClients}` });
  if (config.http?.trustProxy === true) warnings.push({ subject: 'trusted proxies', message: EVERY_HOP_TRUSTED });
  for (const [host, names] of plainHttpHosts(config.accounts)) {
    const where = `over plain http:// to ${host}, which is not a loopback address: anyone on the network path can read it`;
    const message =
      config.accountsFile === undefined
        ? `CLASSROOM_BASE_URL sends the API key ${where}; use an https:// address`
        : `${names.length > 1 ? `accounts ${names.join(', ')} send their API keys` : `account ${names[0]} sends its API key`} ${where}; use an https:// baseUrl (or CLASSROOM_BASE_URL, which accounts without one use)`;
    warnings.push({ subject: 'remote address', message });
  }
  return warnings;
}

const EVERY_HOP_TRUSTED =
  'TRUST_PROXY=true believes X-Forwarded-For from every hop, so anyone who reaches PORT directly picks their own address ' +
  '(and a fresh one for each failed sign-in); set TRUST_PROXY to the number of proxies in front (e.g. 1) or to their ' +
  'addresses or networks (e.g. 10.0.0.0/8)';

/** Each host reached over http:// that is not this machine, with the accounts sending their key there. */
function plainHttpHosts(accounts: readonly Account[]): Map<string, string[]> {
  const hosts = new Map<string, string[]>();
  for (const account of accounts) {
    // The sandbox's published key has nothing to steal (docker compose reaches the sandbox over http://).
    if (account.classroom.apiKey === SANDBOX_DEFAULTS.CLASSROOM_API_KEY) continue;
    const url = new URL(account.classroom.baseUrl);
    if (url.protocol !== 'http:' || isLoopback(url.hostname)) continue;
    // `host`, not the whole URL: a base URL may carry a user name and password.
    hosts.set(url.host, [...(hosts.get(url.host) ?? []), account.name]);
  }
  return hosts;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** 127.0.0.0/8, ::1 (an IPv4-mapped 127.x too) or localhost, as a URL's hostname spells them. */
export function isLoopback(hostname: string): boolean {
  const host = hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  if (host === 'localhost') return true;
  const family = isIP(host);
  return family !== 0 && LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6');
}
