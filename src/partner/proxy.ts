/**
 * Which proxy, if any, a request to the partner goes through, read the way command-line tools read
 * it (curl, wget, git). `--no-proxy` sends straight. Otherwise the proxy is `--proxy <url>`, else the
 * environment's (`https_proxy`/`HTTPS_PROXY` for an https:// partner, `http_proxy`/`HTTP_PROXY` for
 * http://, then `all_proxy`/`ALL_PROXY`; the lower-case form first, as curl reads them), else the
 * config file's `proxy:`; and `no_proxy`/`NO_PROXY` lists the hosts reached straight whichever proxy
 * was named. A loopback partner (the sandbox) goes straight unless `--proxy` names a proxy on the
 * command line: a proxy of the machine's environment cannot reach the machine's own loopback.
 * Pure: table-tested in test/partner/proxy.test.ts.
 */
import { BlockList, isIP } from 'node:net';
import { QuoteBatchError } from '../errors.js';
import { isLoopbackHost } from './base-url.js';

/** The proxy chosen and where it was named, or why none is used. */
export type ProxyChoice =
  | { proxy: URL; source: string }
  | { proxy: null; reason: string };

export interface ProxyInputs {
  /** The partner's base URL. */
  target: URL;
  /** `--proxy <url>` (a string), `--no-proxy` (false), or neither. */
  flag: string | false | undefined;
  /** The config file's `proxy:`. */
  config: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
}

export function chooseProxy({ target, flag, config, env }: ProxyInputs): ProxyChoice {
  if (flag === false) return { proxy: null, reason: '--no-proxy' };
  const scheme = target.protocol === 'http:' ? 'http' : 'https';
  const fromEnv = firstSet(env, [`${scheme}_proxy`, `${scheme.toUpperCase()}_PROXY`, 'all_proxy', 'ALL_PROXY']);
  const named = nonEmpty(flag) !== undefined
    ? { text: (flag as string).trim(), source: '--proxy' }
    : fromEnv ?? (nonEmpty(config) === undefined ? undefined : { text: (config as string).trim(), source: 'the config file\'s proxy:' });
  if (named === undefined) return { proxy: null, reason: 'no proxy set' };
  const proxy = parseProxyUrl(named.text, named.source);
  const noProxy = firstSet(env, ['no_proxy', 'NO_PROXY']);
  if (noProxy !== undefined) {
    const entry = noProxyMatch(target, noProxy.text);
    if (entry !== undefined) return { proxy: null, reason: `${noProxy.source} has ${entry}` };
  }
  if (isLoopbackHost(target.hostname) && named.source !== '--proxy') {
    return { proxy: null, reason: `${target.hostname} is loopback (a proxy from ${named.source} is not used for it; pass --proxy to send through one)` };
  }
  return { proxy, source: named.source };
}

/**
 * A proxy URL as given: `http://` (CONNECT over plain TCP, the usual corporate proxy) or `https://`
 * (TLS to the proxy itself); a bare `host:port` is `http://`. Its user and password (percent-encoded
 * in the URL) go in `Proxy-Authorization`. Messages name it by {@link displayProxy}, never with them.
 */
export function parseProxyUrl(text: string, source: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new QuoteBatchError('E_CONFIG', `the proxy in ${source} is not a valid URL`, {
      hint: 'write it as http://host:port (with user:password@ before the host if the proxy asks for them; percent-encode @ : / in them)',
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new QuoteBatchError('E_CONFIG', `the proxy ${displayProxy(url)} in ${source} is not supported: only http:// and https:// proxies are`, {
      hint: 'use the HTTP proxy of your network (CONNECT), e.g. http://proxy.example.com:3128',
    });
  }
  if (url.hostname === '') throw new QuoteBatchError('E_CONFIG', `the proxy in ${source} names no host`, { hint: 'write it as http://host:port' });
  return url;
}

/** A proxy as messages show it: scheme, host and port; never its user or password. */
export function displayProxy(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

/** The proxy's password, decoded (what the redactor must never let through), or undefined. */
export function proxyPassword(url: URL): string | undefined {
  if (url.password === '') return undefined;
  try {
    return decodeURIComponent(url.password);
  } catch {
    return url.password;
  }
}

/**
 * The `NO_PROXY` entry that covers `target`, or undefined. Entries are apart by commas or spaces,
 * in any case: `*` covers every host; a name covers itself and every name under it (`example.com`,
 * `.example.com` and `*.example.com` all cover `api.example.com`); an IP address covers itself, a
 * CIDR block (`10.0.0.0/8`, `fd00::/8`) the addresses in it; `:port` after any of these limits it
 * to that port (`[::1]:8443` for IPv6).
 */
export function noProxyMatch(target: URL, list: string): string | undefined {
  const host = target.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  const port = target.port === '' ? (target.protocol === 'http:' ? 80 : 443) : Number(target.port);
  const hostIp = isIP(host);
  for (const raw of list.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return entry;
    const parsed = splitPort(entry);
    if (parsed.port !== undefined && parsed.port !== port) continue;
    const name = parsed.host;
    const slash = name.indexOf('/');
    if (slash > 0) {
      const base = name.slice(0, slash);
      const bits = Number(name.slice(slash + 1));
      const family = isIP(base);
      if (family === 0 || hostIp !== family || !Number.isInteger(bits)) continue;
      const type = family === 4 ? 'ipv4' : 'ipv6';
      const block = new BlockList();
      try {
        block.addSubnet(base, bits, type);
      } catch {
        continue; // not a block (e.g. /40 for IPv4): covers nothing
      }
      if (block.check(host, type)) return raw.trim();
      continue;
    }
    const ipFamily = isIP(name);
    if (ipFamily !== 0) {
      if (hostIp !== ipFamily) continue;
      const block = new BlockList();
      block.addAddress(name, ipFamily === 4 ? 'ipv4' : 'ipv6');
      if (block.check(host, ipFamily === 4 ? 'ipv4' : 'ipv6')) return raw.trim();
      continue;
    }
    const suffix = name.replace(/^\*?\./, '').replace(/\.$/, '');
    if (suffix !== '' && (host === suffix || host.endsWith(`.${suffix}`))) return raw.trim();
  }
  return undefined;
}

/** `host:port`, `[v6]:port`, `[v6]`, a bare IPv6 address (more than one colon: no port), or a host. */
function splitPort(entry: string): { host: string; port: number | undefined } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed !== null) return { host: bracketed[1] as string, port: bracketed[2] === undefined ? undefined : Number(bracketed[2]) };
  const colons = entry.split(':').length - 1;
  const withPort = colons === 1 ? /^(.*):(\d+)$/.exec(entry) : null;
  return withPort === null ? { host: entry, port: undefined } : { host: withPort[1] as string, port: Number(withPort[2]) };
}

function firstSet(env: Readonly<Record<string, string | undefined>>, names: readonly string[]): { text: string; source: string } | undefined {
  for (const name of names) {
    const value = nonEmpty(env[name]);
    if (value !== undefined) return { text: value, source: name };
  }
  return undefined;
}

function nonEmpty(value: string | false | undefined): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}
