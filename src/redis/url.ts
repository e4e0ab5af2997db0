// What REDIS_URL names: one Redis server (redis://, rediss://) or a Redis Cluster
// (redis+cluster://, rediss+cluster://) given by a comma-separated list of seed nodes. Pure
// parsing, shared by config validation and the connection factory.
import { redactUrl } from '../support/urls.ts';

export interface ClusterTarget {
  /** Seed nodes; the client learns the rest of the cluster from any one of them. */
  nodes: { host: string; port: number }[];
  username: string | undefined;
  password: string | undefined;
  tls: boolean;
}

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(.*)$/i;
export const CLUSTER_URL_FORM = 'redis+cluster://[user:password@]host:port[,host:port…] (rediss+cluster:// for TLS)';

export function isClusterUrl(url: string): boolean {
  return CLUSTER_URL.test(url);
}

/** Throws an Error whose message says what is wrong, in words fit for a config error. */
export function parseClusterUrl(url: string): ClusterTarget {
  const [, scheme, rest] = CLUSTER_URL.exec(url) ?? [];
  if (scheme === undefined || rest === undefined) throw new Error(`must have the form ${CLUSTER_URL_FORM}`);
  const tls = scheme.toLowerCase() === 'rediss';
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const tail = end < 0 ? '' : rest.slice(end);
  // A cluster has only database 0, and nothing else belongs after the nodes.
  if (tail !== '' && tail !== '/' && tail !== '/0') {
    throw new Error(`a cluster URL ends after its nodes (a cluster has only database 0; found "${tail}"); form: ${CLUSTER_URL_FORM}`);
  }
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? undefined : authority.slice(0, at);
  const hosts = at < 0 ? authority : authority.slice(at + 1);
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    username = decode(colon < 0 ? userinfo : userinfo.slice(0, colon)) || undefined;
    password = colon < 0 ? undefined : decode(userinfo.slice(colon + 1)) || undefined;
  }
  if (hosts === '') throw new Error(`names no nodes; form: ${CLUSTER_URL_FORM}`);
  const nodes = hosts.split(',').map((node) => parseNode(node));
  return { nodes, username, password, tls };
}

function parseNode(text: string): { host: string; port: number } {
  const [, host, portText] = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(text) ?? [];
  if (host === undefined) throw new Error(`"${text}" is not a node; each node is host:port (IPv6 in brackets); form: ${CLUSTER_URL_FORM}`);
  const port = portText === undefined ? 6379 : Number(portText);
  if (port < 1 || port > 65535) throw new Error(`"${text}" has no valid port (1-65535)`);
  return { host: host.replace(/^\[(.*)\]$/, '$1'), port };
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new Error('has a user name or password that is not valid percent-encoding');
  }
}

/** Why `url` cannot be used as REDIS_URL, or undefined when it can. */
export function redisUrlProblem(url: string): string | undefined {
  if (isClusterUrl(url)) {
    try {
      parseClusterUrl(url);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `must be a URL: redis://host:port, rediss://host:port, or for a cluster ${CLUSTER_URL_FORM}`;
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    return `must start with redis://, rediss://, redis+cluster:// or rediss+cluster:// (found ${parsed.protocol}//)`;
  }
  return undefined;
}

/**
 * Whether every key under `prefix` hashes to one cluster slot. Redis hashes only the part between
 * the key's first "{" and the next "}", and only when that part is not empty.
 */
export function hasHashTag(prefix: string): boolean {
  const open = prefix.indexOf('{');
  if (open < 0) return false;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1;
}

/** The URL with its password masked, for logs and messages (works for cluster URLs too). */
export function redactRedisUrl(url: string): string {
  if (isClusterUrl(url)) {
    const start = url.indexOf('//') + 2;
    const at = url.lastIndexOf('@');
    const colon = url.indexOf(':', start);
    if (at < start || colon < 0 || colon > at) return url;
    return `${url.slice(0, colon)}:***${url.slice(at)}`;
  }
  return redactUrl(url);
}
