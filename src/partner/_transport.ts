/**
 * One HTTP attempt on the wire, through got, reduced to what the client needs and nothing of got's
 * objects (which carry the request options, and so the `x-api-key` header). The answer body is
 * read as a stream and cut at `maxBodyBytes` (decompressed), so a partner that answers 50 MB costs
 * 1 MiB of memory, not 50.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import got, { type Got } from 'got';
import { TOOL_VERSION } from '../version.js';
import { BEFORE_SEND_PHASES, NEVER_LEFT_CODES } from './_classify.js';

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
    }
  | { type: 'transport'; code: string; detail: string; bodySent: boolean };

export interface TransportOptions {
  apiKey: string;
  /** Keep-alive sockets kept per host. */
  sockets: number;
  timeoutMs: number;
  maxBodyBytes: number;
}

/** Idle keep-alive sockets are closed after this (below the usual 5 s server idle time-out). */
const IDLE_SOCKET_TIMEOUT_MS = 4000;

export class Transport {
  readonly #got: Got;
  readonly #agents: { http: http.Agent; https: https.Agent };
  readonly #maxBodyBytes: number;

  constructor(options: TransportOptions) {
    const { sockets, timeoutMs } = options;
    this.#maxBodyBytes = options.maxBodyBytes;
    // An idle socket the server closes just as a POST is written on it would look like a reset
    // after sending (in_doubt). Closing idle sockets first avoids that: Node applies the server's
    // `Keep-Alive: timeout=N` hint only below the agent's own `timeout`, so one must be set.
    const agentOptions = { keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets, timeout: IDLE_SOCKET_TIMEOUT_MS };
    this.#agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
    const connectMs = Math.min(timeoutMs, 10_000);
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
      const chunks: Buffer[] = [];
      let bytes = 0;
      const stream = this.#got.stream.post(url, { body: payload });
      const answer = (truncated: boolean): RawAttempt => ({
        type: 'response', status, statusText, retryAfter, truncated, bytes,
        text: chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'),
      });
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
      stream.on('error', (error: unknown) => settle(describeTransportError(error)));
    });
  }

  /** Destroys the keep-alive sockets. */
  close(): void {
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }
}

/**
 * Reads only what is needed from a got error: its code, a short text and whether the body left.
 * The error itself is dropped because it holds the options (and so the `x-api-key` header).
 */
export function describeTransportError(error: unknown): RawAttempt {
  const e = (error ?? {}) as { code?: unknown; message?: unknown; event?: unknown; name?: unknown; timings?: { upload?: number } };
  const code = typeof e.code === 'string' && e.code !== '' ? e.code : 'ERR_REQUEST';
  const event = typeof e.event === 'string' ? e.event : undefined;
  let bodySent = e.timings?.upload !== undefined;
  if (NEVER_LEFT_CODES.has(code) || (event !== undefined && BEFORE_SEND_PHASES.has(event))) bodySent = false;
  let detail: string;
  if (e.name === 'TimeoutError' && event !== undefined) {
    detail = `time-out in the '${event}' phase`;
  } else if (e.name === 'ReadError') {
    detail = 'the answer was cut off';
  } else {
    detail = typeof e.message === 'string' ? e.message.slice(0, 200) : 'request failed';
  }
  return { type: 'transport', code, detail, bodySent };
}
