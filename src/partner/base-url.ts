import { isIP } from 'node:net';
import { QuoteBatchError } from '../errors.js';

/**
 * Checks a partner base URL and returns it parsed. The API key travels in a header of every
 * request, so the URL must be `https://`; plain `http://` is allowed only on loopback (the sandbox),
 * where nothing leaves the machine. Credentials, queries and fragments are refused: a secret must
 * not hide in a URL that ends up in messages and in the ledger. Error messages never echo them.
 */
export function assertSafeBaseUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    throw new QuoteBatchError('E_CONFIG', `base URL "${redactUrlText(url)}" is not a valid URL`, {
      hint: 'use a full URL such as https://partner.example.com',
    });
  }
  const shown = displayUrl(parsed);
  if (parsed.username !== '' || parsed.password !== '') {
    throw new QuoteBatchError('E_CONFIG', `base URL ${shown} must not contain credentials`, {
      hint: 'the API key comes from QUOTE_BATCH_API_KEY or --api-key-file',
    });
  }
  if (parsed.search !== '' || parsed.hash !== '') {
    throw new QuoteBatchError('E_CONFIG', `base URL ${shown} must not contain a query or fragment`);
  }
  if (parsed.protocol === 'https:') return parsed;
  if (parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname)) return parsed;
  if (parsed.protocol === 'http:') {
    throw new QuoteBatchError('E_CONFIG', `base URL ${shown} must use https:// (plain http is allowed only on loopback)`, {
      hint: 'the API key would travel in clear text',
    });
  }
  throw new QuoteBatchError('E_CONFIG', `base URL ${shown} must use https://`);
}

/** True for `localhost`, 127.0.0.0/8 and ::1 (URL hostnames keep IPv6 in brackets). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host === '::1') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return false;
}

/** A URL as it may appear in a message: scheme, host, port and path; never credentials or query. */
export function displayUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}

/** Masks `user:password@` in text that did not even parse as a URL. */
function redactUrlText(text: string): string {
  return text.replace(/\/\/[^/?#]*@/, '//***@').replace(/[?#].*$/, '');
}

/** Joins a base URL (which may carry a path prefix) and an absolute API path. */
export function joinUrl(base: URL, path: string): URL {
  const joined = new URL(base.href);
  joined.pathname = `${base.pathname.replace(/\/+$/, '')}${path}`;
  return joined;
}
