/**
 * One HTTP attempt on the wire, through got, reduced to what the client needs and nothing of got's
 * objects (which carry the request options, and so the `x-api-key` header). The answer body is
 * read as a stream and cut at `maxBodyBytes` (decompressed), so a partner that answers 50 MB costs
 * 1 MiB of memory, not 50.
 *
 * Through a proxy, hpagent's agents open a CONNECT tunnel per connection (https:// and http://
 * partners alike) and keep it alive as any keep-alive socket; a failure before the tunnel exists is
 * tagged as the proxy's (`RawAttempt.proxy`), so that it is read as an outage of the way out, not
 * of the partner. Extra CAs and the client certificate go in one TLS context, made once.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureContext } from 'node:tls';
import { TextDecoder } from 'node:util';
import got, { type Got } from 'got';
import { HttpProxyAgent, HttpsProxyAgent } from 'hpagent';
import { TOOL_VERSION } from '../version.js';
import { BEFORE_SEND_PHASES, isTlsFailure, NEVER_LEFT_CODES } from './_classify.js';
import type { NetworkOptions } from './client-api.js';
import { displayProxy } from './proxy.js';
import { RATE_LIMIT_HEADER } from './rate-limit-headers.js';

/** What one attempt produced, before classification. */
export type RawAttempt =
  | {
      type: 'response';
      status: number;
      statusText: string;
      retryAfter: string | undefined;
      /** The body as text, at most `maxBodyBytes` of it (see `truncated`). */
      text: string;
      /** True when the body was longer than `maxBodyBytes` and was cut. */
      truncated: boolean;
      /** True when `text` was already redacted (by the HTTP thread, which holds the key as well). */
      redacted?: boolean;
      /** Bytes of body received (up to the cut). */
      bytes: number;
      /**
       * Set when the status line arrived but the body could not be read: not the gzip or deflate
       * its `Content-Encoding` says, cut short after the headers, in a charset that cannot be
       * decoded, or not complete within the time-out. The answer is still classified by its status.
       */
      bodyError?: string;
      /**
       * The answer's rate-limit headers (`RateLimit*`, `X-RateLimit-*`, `X-Rate-Limit-*`; lower-case
       * names, bounded), when it had any: what the partner announces of our limit (`rate-limit-headers.ts`).
       */
      rateLimit?: Record<string, string>;
    }
  | {
      type: 'transport';
      code: string;
      detail: string;
      bodySent: boolean;
      /** Set when the proxy failed before a tunnel existed: its answer to CONNECT, if any. */
      proxy?: { status?: number };
    };

export interface TransportOptions {
  apiKey: string;
  /** Keep-alive sockets kept per host. */
  sockets: number;
  timeoutMs: number;
  maxBodyBytes: number;
  network?: NetworkOptions;
}

/** Idle keep-alive sockets are closed after this (below the usual 5 s server idle time-out). */
const IDLE_SOCKET_TIMEOUT_MS = 4000;

export class Transport {
  readonly #got: Got;
  readonly #agents: { http: http.Agent; https: https.Agent };
  readonly #maxBodyBytes: number;

  readonly #proxyShown: string | undefined;

  constructor(options: TransportOptions) {
    const { sockets, timeoutMs, network = {} } = options;
    this.#maxBodyBytes = options.maxBodyBytes;
    const connectMs = Math.min(timeoutMs, 10_000);
    // An idle socket the server closes just as a POST is written on it would look like a reset
    // after sending (in_doubt). Closing idle sockets first avoids that: Node applies the server's
    // `Keep-Alive: timeout=N` hint only below the agent's own `timeout`, so one must be set.
    const agentOptions = { keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets, timeout: IDLE_SOCKET_TIMEOUT_MS };
    // One context for every connection: the CAs and the certificate are parsed once, and the
    // agent's socket pool is not keyed on the whole CA bundle's text (as it is for a `ca` option).
    const secureContext = secureContextOf(network);
    const tlsOptions = secureContext === undefined ? agentOptions : { ...agentOptions, secureContext };
    if (network.proxy === undefined) {
      this.#agents = { http: new http.Agent(agentOptions), https: new https.Agent(tlsOptions) };
    } else {
      const proxy = new URL(network.proxy);
      this.#proxyShown = displayProxy(proxy);
      // The CONNECT has the connection time-out (hpagent ends it with 'Proxy timeout'); an https://
      // proxy's own certificate is checked against the same roots as the partner's.
      const proxyRequestOptions = { timeout: connectMs, ...(network.ca === undefined ? {} : { ca: network.ca }) };
      this.#agents = {
        http: tagProxyFailures(new HttpProxyAgent({ ...agentOptions, proxy, proxyRequestOptions })),
        https: tagProxyFailures(new HttpsProxyAgent({ ...tlsOptions, proxy, proxyRequestOptions })),
      };
    }
    this.#got = got.extend({
      agent: this.#agents,
      headers: {
        'x-api-key': options.apiKey,
        'content-type': 'application/json',
        accept: 'application/json',
        'user-agent': `quote-batch/${TOOL_VERSION}`,
      },
      // got retries no POST by default; it is switched off outright because the client's loop
      // retries itself: only it knows whether the body left (README, "Outcomes, resume and the ledger").
      retry: { limit: 0 },
      // got sets no time-out by default. The connection's phases have their own, and the whole
      // request one; which fired tells whether the body may have been sent. (A `send` or `response`
      // time-out as long as the whole request's could never fire first: its timer starts later.
      // Leaving them out spares two timers and their listeners per request.)
      timeout: {
        lookup: connectMs,
        connect: connectMs,
        secureConnect: connectMs,
        request: timeoutMs,
      },
      // Following a redirect would replay the key to another address.
      followRedirect: false,
      throwHttpErrors: false,
      decompress: true,
    });
  }

  /** Sends one POST and reads its answer, at most `maxBodyBytes` of it. Never rejects. */
  post(url: URL, payload: string): Promise<RawAttempt> {
    const max = this.#maxBodyBytes;
    return new Promise<RawAttempt>((resolve) => {
      let settled = false;
      let status = 0;
      let statusText = '';
      let retryAfter: string | undefined;
      let charset: string | undefined;
      let rateLimit: Record<string, string> | undefined;
      const chunks: Buffer[] = [];
      let bytes = 0;
      const stream = this.#got.stream.post(url, { body: payload });
      const answer = (truncated: boolean, bodyError?: string): RawAttempt => {
        const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        const decoded = decodeBody(body, charset);
        const why = bodyError ?? decoded.error;
        return {
          type: 'response', status, statusText, retryAfter, truncated, bytes, text: decoded.text,
          ...(why === undefined ? {} : { bodyError: why }), ...(rateLimit === undefined ? {} : { rateLimit }),
        };
      };
      const settle = (result: RawAttempt): void => {
        if (settled) return;
        settled = true;
        resolve(result);
      };
      stream.on('response', (response: http.IncomingMessage) => {
        status = response.statusCode ?? 0;
        statusText = response.statusMessage ?? http.STATUS_CODES[status] ?? '';
        const header = response.headers['retry-after'];
        retryAfter = Array.isArray(header) ? header[0] : header;
        charset = charsetOf(response.headers['content-type']);
        rateLimit = rateLimitHeaders(response.headers);
      });
      stream.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = max - bytes;
        if (chunk.length > room) {
          if (room > 0) chunks.push(chunk.subarray(0, room));
          bytes = max;
          // The status still counts; the rest of the body is not read (the socket is dropped).
          settle(answer(true));
          stream.destroy();
          return;
        }
        chunks.push(chunk);
        bytes += chunk.length;
      });
      stream.on('end', () => settle(answer(false)));
      // Once the status line has arrived the partner has answered: a body that then fails (a bad
      // gzip, a reset, a time-out) leaves the answer unreadable, not the request in doubt.
      stream.on('error', (error: unknown) => settle(status > 0 ? answer(false, describeBodyError(error)) : describeTransportError(error, this.#proxyShown)));
    });
  }

  /** Destroys the keep-alive sockets. */
  close(): void {
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }
}

/** At most this many rate-limit headers are passed on, each cut at this length: a gateway's are a handful of short ones. */
const MAX_RATE_LIMIT_HEADERS = 16;
const MAX_RATE_LIMIT_VALUE = 1024;

/** The answer's rate-limit headers, bounded; undefined when it has none (most partners). */
export function rateLimitHeaders(headers: http.IncomingHttpHeaders): Record<string, string> | undefined {
  let found: Record<string, string> | undefined;
  let n = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || !RATE_LIMIT_HEADER.test(name)) continue;
    found ??= {};
    found[name] = (Array.isArray(value) ? value.join(', ') : value).slice(0, MAX_RATE_LIMIT_VALUE);
    n += 1;
    if (n >= MAX_RATE_LIMIT_HEADERS) break;
  }
  return found;
}

/** Set on an error of the proxy hop (see {@link tagProxyFailures}): the proxy's answer to CONNECT, if any. */
const PROXY_FAILURE = Symbol('quote-batch proxy failure');
interface ProxyFailure { status?: number; timedOut: boolean }

/**
 * The agent, with every failure to open its tunnel marked as the proxy's: hpagent hands such
 * failures (no connection to the proxy, a CONNECT answered other than 200, its time-out) to the
 * connection callback, and nothing else. Once the tunnel exists, errors are the partner's hop.
 */
function tagProxyFailures<A extends http.Agent>(agent: A): A {
  const open = agent.createConnection.bind(agent) as (options: unknown, callback: (error: Error | null, socket: Duplex | null) => void) => void;
  (agent as unknown as { createConnection: typeof open }).createConnection = (options, callback) => {
    open(options, (error, socket) => {
      if (error !== null) {
        const status = /^Bad response: (\d{3})$/.exec(error.message)?.[1];
        const failure: ProxyFailure = { timedOut: error.message === 'Proxy timeout', ...(status === undefined ? {} : { status: Number(status) }) };
        (error as Error & { [PROXY_FAILURE]?: ProxyFailure })[PROXY_FAILURE] = failure;
      }
      callback(error, socket);
    });
  };
  return agent;
}

/** The TLS context of the partner's connections when it differs from Node's default. */
function secureContextOf(network: NetworkOptions): SecureContext | undefined {
  if (network.ca === undefined && network.cert === undefined) return undefined;
  return createSecureContext({
    ...(network.ca === undefined ? {} : { ca: network.ca }),
    ...(network.cert === undefined ? {} : { cert: network.cert, key: network.key, passphrase: network.passphrase }),
  });
}

/** The `charset` parameter of a `Content-Type`, lower-cased; undefined when there is none. */
export function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return match?.[1]?.toLowerCase();
}

/**
 * The body as text: UTF-8 unless the answer names another charset that the WHATWG Encoding
 * standard knows (latin1, utf-16le…); a charset it does not know leaves the body unreadable.
 */
export function decodeBody(body: Buffer, charset: string | undefined): { text: string; error?: string } {
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') return { text: body.toString('utf8') };
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    return { text: '', error: `its charset "${charset.slice(0, 40)}" cannot be decoded` };
  }
  return { text: decoder.decode(body) };
}

/** Why a body whose status line arrived could not be read, from got's error (never the error itself: it holds the key). */
export function describeBodyError(error: unknown): string {
  const e = (error ?? {}) as { code?: unknown; name?: unknown; event?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (code.startsWith('Z_')) return `the body is not the gzip or deflate its Content-Encoding says (${code})`;
  if (e.name === 'TimeoutError') return 'the body did not arrive in time (time-out after the status line)';
  return `the body was cut short after the headers (${code === '' ? 'connection closed' : code})`;
}

/**
 * Reads only what is needed from a got error: its code, a short text and whether the body left.
 * The error itself is dropped because it holds the options (and so the `x-api-key` header).
 * `proxyShown` names the proxy in the text of a failure of the proxy hop.
 */
export function describeTransportError(error: unknown, proxyShown?: string): RawAttempt {
  const e = (error ?? {}) as { code?: unknown; message?: unknown; event?: unknown; name?: unknown; timings?: { upload?: number; secureConnect?: number }; cause?: unknown };
  const viaProxy = (e.cause as { [PROXY_FAILURE]?: ProxyFailure } | undefined)?.[PROXY_FAILURE] ?? (e as { [PROXY_FAILURE]?: ProxyFailure })[PROXY_FAILURE];
  if (viaProxy !== undefined) return describeProxyFailure(viaProxy, e.code, (e.cause as { message?: unknown } | undefined)?.message ?? e.message, proxyShown ?? 'the proxy');
  const code = typeof e.code === 'string' && e.code !== '' ? e.code : 'ERR_REQUEST';
  const event = typeof e.event === 'string' ? e.event : undefined;
  let bodySent = e.timings?.upload !== undefined;
  if (NEVER_LEFT_CODES.has(code) || (event !== undefined && BEFORE_SEND_PHASES.has(event))) bodySent = false;
  // A TLS handshake that failed carried nothing, although got counts the body as written (into the
  // socket that was never secured). EPROTO after the secure connection was made may be mid-answer.
  if (isTlsFailure(code) && (code !== 'EPROTO' || e.timings?.secureConnect === undefined)) bodySent = false;
  let detail: string;
  if (e.name === 'TimeoutError' && event !== undefined) {
    detail = `time-out in the '${event}' phase`;
  } else if (e.name === 'ReadError') {
    detail = 'the answer was cut off';
  } else if (/^ERR_SSL_\w+_ALERT_/.test(code)) {
    // OpenSSL's own text names its source files; the alert's name says it all.
    detail = `the server ended the TLS handshake with the alert "${code.replace(/^ERR_SSL_\w+?_ALERT_/, '').toLowerCase().replace(/_/g, ' ')}"`;
  } else {
    detail = typeof e.message === 'string' ? e.message.replace(/\s+/g, ' ').trim().slice(0, 200) : 'request failed';
  }
  return { type: 'transport', code, detail, bodySent };
}

/** A failure before the tunnel existed: nothing left for the partner. The text names the hop. */
function describeProxyFailure(failure: ProxyFailure, code: unknown, message: unknown, shown: string): RawAttempt {
  if (failure.status !== undefined) {
    const text = http.STATUS_CODES[failure.status] ?? '';
    const what = failure.status === 407
      ? 'it asks for credentials, or refused those given'
      : 'it could not or would not reach the partner';
    return {
      type: 'transport', code: `PROXY_${failure.status}`, bodySent: false, proxy: { status: failure.status },
      detail: `the proxy ${shown} answered ${failure.status}${text === '' ? '' : ` ${text}`} to CONNECT: ${what}`,
    };
  }
  if (failure.timedOut) {
    return { type: 'transport', code: 'ETIMEDOUT', bodySent: false, proxy: {}, detail: `no answer from the proxy ${shown} to CONNECT in time` };
  }
  const errorCode = typeof code === 'string' && code !== '' && code !== 'ERR_GOT_REQUEST_ERROR' ? code : 'ERR_PROXY';
  const reason = typeof message === 'string' ? message.slice(0, 200) : 'failed';
  return { type: 'transport', code: errorCode, bodySent: false, proxy: {}, detail: `no connection to the proxy ${shown}: ${reason}` };
}
