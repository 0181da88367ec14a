/**
 * The partner HTTP client: one got instance per environment, with the retry policy of the
 * contract (§5) on top. Every call returns a classified {@link CallOutcome}; a per-request
 * failure is never thrown, and nothing it returns holds the API key or got's error objects
 * (which carry the request options, headers included).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import got, { type Got, type Response } from 'got';
import type { ZodType } from 'zod';
import { TOOL_VERSION } from '../version.js';
import { sleep } from './_sleep.js';
import {
  BEFORE_SEND_PHASES,
  NEVER_LEFT_CODES,
  classifyResponse,
  classifyTransportFailure,
  readString,
  type AttemptClass,
} from './_classify.js';
import { calculateRetryDelay, parseRetryAfter } from './backoff.js';
import { assertSafeBaseUrl, displayUrl, joinUrl } from './base-url.js';
import { CircuitBreaker, type BreakerPermit, type BreakerState } from './circuit-breaker.js';
import { PauseGate, RateLimiter } from './rate-limiter.js';
import { AgentValidateResponse, QuoteSuccessResponse } from './schemas.js';
import type { AttemptKind, AttemptRecord, CallOutcome, Operation, OutcomeKind } from './types.js';

/** Options of {@link createPartnerClient}. Defaults suit production; tests pass small time values. */
export interface PartnerClientOptions {
  /** The environment's base URL; `https://` except on loopback (see `assertSafeBaseUrl`). */
  baseUrl: string;
  /** Sent as `x-api-key`; never appears in an outcome, a message or an error. */
  apiKey: string;
  /** Keep-alive sockets kept open (size it to the caller's concurrency). Default 8. */
  concurrency?: number;
  /** Whole-request time-out in ms; the phase time-outs are derived from it. Default 30000. */
  timeoutMs?: number;
  /** Attempts per call for retryable failures (1 = no retry). Default 5. */
  maxAttempts?: number;
  /** At most this many attempts per second across the client; 0 = no cap. Default 0. */
  rate?: number;
  /** Consecutive transient failures that halt the client (circuit breaker); 0 = never. Default 50. */
  maxConsecutiveFailures?: number;
  /** Largest `Retry-After` honoured, in ms; a longer one ends the call as `retryable`. Default 120000. */
  retryAfterCapMs?: number;
  /** First back-off ceiling in ms (full jitter, doubling per attempt). Default 500. */
  backoffBaseMs?: number;
  /** Largest back-off ceiling in ms. Default 30000. */
  backoffCapMs?: number;
  /** Consecutive transient failures that open the breaker. Default 5. */
  breakerOpenAfter?: number;
  /** First cool-down of an open breaker in ms; doubles per failed probe up to 30 s. Default 1000. */
  breakerCooldownMs?: number;
  /** Source of jitter in [0, 1). Default `Math.random`. */
  random?: () => number;
}

/** Per-call hooks and cancellation. */
export interface CallOptions {
  /**
   * Aborts the *waiting* (back-off, rate cap, pause gate, open breaker): the call then returns
   * `retryable` with errorCode `aborted` without sending. A request already on the wire is never
   * aborted: its answer is still awaited and recorded.
   */
  signal?: AbortSignal;
  /**
   * Called right before each attempt leaves, after all waits, and awaited: the pipeline durably
   * marks the row `in_flight` here. If it throws (or rejects), nothing is sent and the call rejects
   * with that error.
   */
  beforeSend?: (attempt: number) => void | Promise<void>;
  /** Called after each attempt with its record (also found in `outcome.attempts`). */
  onAttempt?: (attempt: AttemptRecord) => void;
}

export interface PartnerClient {
  /** `POST /account/v1/agent/validate` (a read: every transport failure is retried). */
  validateAgent(email: string, options?: CallOptions): Promise<CallOutcome<AgentValidateResponse>>;
  /** `POST /partner/v2/policy/quote|lead` (a write: not resent once the body may have arrived). */
  submit(operation: Operation, body: unknown, options?: CallOptions): Promise<CallOutcome<QuoteSuccessResponse>>;
  /** True once the circuit breaker gave up: every call returns `retryable`/`circuit_open` unsent. */
  readonly halted: boolean;
  readonly breakerState: BreakerState;
  /** Destroys the keep-alive sockets. */
  close(): void;
}

const PATHS: Readonly<Record<AttemptKind, string>> = {
  agent_validate: '/account/v1/agent/validate',
  quote: '/partner/v2/policy/quote',
  lead: '/partner/v2/policy/lead',
};
/** Non-JSON bodies are kept for diagnosis, but not whole: an HTML error page can be large. */
const MAX_RAW_BODY = 2000;
const MAX_PARTNER_MESSAGE = 300;
const REDACTED = '[redacted]';
/** Idle keep-alive sockets are closed after this (below the usual 5 s server idle time-out). */
const IDLE_SOCKET_TIMEOUT_MS = 4000;

export function createPartnerClient(options: PartnerClientOptions): PartnerClient {
  return new GotPartnerClient(options);
}

/** What one attempt produced, before classification; holds no got object. */
type RawAttempt =
  | { type: 'response'; status: number; statusText: string; retryAfter: string | undefined; text: string }
  | { type: 'transport'; code: string; detail: string; bodySent: boolean };

interface Normalised {
  concurrency: number;
  timeoutMs: number;
  maxAttempts: number;
  retryAfterCapMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  random: () => number;
}

class GotPartnerClient implements PartnerClient {
  readonly #options: Normalised;
  readonly #apiKey: string;
  readonly #base: URL;
  readonly #agents: { http: http.Agent; https: https.Agent };
  readonly #got: Got;
  readonly #rate: RateLimiter;
  readonly #pause = new PauseGate();
  readonly #breaker: CircuitBreaker;

  constructor(options: PartnerClientOptions) {
    this.#base = assertSafeBaseUrl(options.baseUrl);
    this.#apiKey = options.apiKey;
    this.#options = {
      concurrency: positiveInt(options.concurrency, 8),
      timeoutMs: positiveInt(options.timeoutMs, 30_000),
      maxAttempts: positiveInt(options.maxAttempts, 5),
      retryAfterCapMs: nonNegative(options.retryAfterCapMs, 120_000),
      backoffBaseMs: nonNegative(options.backoffBaseMs, 500),
      backoffCapMs: nonNegative(options.backoffCapMs, 30_000),
      random: options.random ?? Math.random,
    };
    this.#rate = new RateLimiter(nonNegative(options.rate, 0));
    this.#breaker = new CircuitBreaker({
      openAfter: nonNegative(options.breakerOpenAfter, 5),
      cooldownMs: nonNegative(options.breakerCooldownMs, 1000),
      maxCooldownMs: 30_000,
      maxConsecutiveFailures: nonNegative(options.maxConsecutiveFailures, 50),
    });

    const { concurrency, timeoutMs } = this.#options;
    // An idle socket the server closes just as a POST is written on it would look like a reset
    // after sending (in_doubt). Closing idle sockets first avoids that: Node applies the server's
    // `Keep-Alive: timeout=N` hint only below the agent's own `timeout`, so one must be set.
    const agentOptions = {
      keepAlive: true,
      maxSockets: concurrency,
      maxFreeSockets: concurrency,
      timeout: IDLE_SOCKET_TIMEOUT_MS,
    };
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
      // got retries no POST by default; it is switched off outright because the loop in #call
      // retries itself: only it knows whether the body left (contract §5).
      retry: { limit: 0 },
      // got sets no time-out by default. Each phase has one, and the whole request too; which
      // phase fired tells whether the body was sent.
      timeout: {
        lookup: connectMs,
        connect: connectMs,
        secureConnect: connectMs,
        send: timeoutMs,
        response: timeoutMs,
        request: timeoutMs,
      },
      // Following a redirect would replay the key to another address.
      followRedirect: false,
      throwHttpErrors: false,
      // Read as text and parse here: an error body may be HTML or empty.
      responseType: 'text',
      decompress: true,
    });
  }

  get halted(): boolean {
    return this.#breaker.halted;
  }

  get breakerState(): BreakerState {
    return this.#breaker.state;
  }

  // async, so that even a programming error (an unserialisable body) arrives as a rejection.
  async validateAgent(email: string, options: CallOptions = {}): Promise<CallOutcome<AgentValidateResponse>> {
    return this.#call('agent_validate', JSON.stringify({ email }), AgentValidateResponse, options);
  }

  async submit(operation: Operation, body: unknown, options: CallOptions = {}): Promise<CallOutcome<QuoteSuccessResponse>> {
    if (operation !== 'quote' && operation !== 'lead') throw new TypeError(`unknown partner operation "${String(operation)}"`);
    return this.#call(operation, JSON.stringify(body), QuoteSuccessResponse, options);
  }

  close(): void {
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }

  async #call<T>(kind: AttemptKind, payload: string, schema: ZodType<T>, options: CallOptions): Promise<CallOutcome<T>> {
    const started = performance.now();
    const url = joinUrl(this.#base, PATHS[kind]);
    const label = `POST ${displayUrl(url)}`;
    const attempts: AttemptRecord[] = [];
    let last: { raw: RawAttempt; cls: AttemptClass; body: unknown } | undefined;

    const finish = (kindOut: OutcomeKind, errorCode: string | null, detail: string): CallOutcome<T> => {
      const body = last?.body ?? null;
      let parsed: T | undefined;
      if (kindOut === 'ok') {
        const result = schema.safeParse(body);
        if (result.success) parsed = result.data;
      }
      const tries = attempts.length > 1 ? `; ${attempts.length} attempts` : '';
      return {
        kind: kindOut,
        httpStatus: last?.raw.type === 'response' ? last.raw.status : null,
        body,
        parsed,
        errorCode: errorCode === null ? null : this.#redact(errorCode),
        message: this.#redact(`${label}: ${detail}${tries}`.replace(/[\r\n]+/g, ' ')),
        durationMs: Math.round(performance.now() - started),
        attempts,
      };
    };

    let lastDetail: string | undefined;
    const notSent = (why: string): string => (lastDetail === undefined ? `not sent: ${why}` : `${lastDetail}; not retried: ${why}`);

    for (let attempt = 1; ; attempt += 1) {
      const permit = await this.#admit(options.signal);
      if (permit === 'halted') {
        return finish('retryable', 'circuit_open', notSent('the circuit breaker halted after too many consecutive failures'));
      }
      if (permit === 'aborted') return finish('retryable', 'aborted', notSent('stopped while waiting'));

      try {
        await options.beforeSend?.(attempt);
      } catch (error) {
        this.#breaker.release(permit);
        throw error;
      }
      const startedAt = new Date().toISOString();
      const t0 = performance.now();
      const raw = await this.#send(url, payload);
      const durationMs = Math.round(performance.now() - t0);

      const body = raw.type === 'response' ? this.#parseBody(raw.text) : null;
      const cls = raw.type === 'response' ? classifyResponse(kind, raw.status, body) : classifyTransportFailure(kind, raw.code, raw.bodySent);
      last = { raw, cls, body };
      this.#feedBreaker(permit, cls);
      const record: AttemptRecord = {
        kind,
        startedAt,
        durationMs,
        httpStatus: raw.type === 'response' ? raw.status : null,
        errorCode: cls.errorCode === null ? null : this.#redact(cls.errorCode),
        outcome: cls.outcome,
      };
      const retryAfterMs = raw.type === 'response' ? parseRetryAfter(raw.retryAfter, Date.now()) : undefined;
      const delay = cls.retry
        ? calculateRetryDelay({
            attempt,
            retryAfterMs,
            baseMs: this.#options.backoffBaseMs,
            capMs: this.#options.backoffCapMs,
            retryAfterCapMs: this.#options.retryAfterCapMs,
            random: this.#options.random,
          })
        : null;
      // A throttled worker slows every worker (the partner's limit is per key, not per socket),
      // and at once, before any hook runs: even when this call has no attempt left.
      if (raw.type === 'response' && raw.status === 429 && delay !== null) this.#pause.pauseFor(retryAfterMs ?? delay);

      attempts.push(record);
      options.onAttempt?.(record);

      const detail = describe(raw, body, cls);
      lastDetail = detail;
      if (!cls.retry) return finish(cls.outcome, cls.errorCode, detail);
      if (attempt >= this.#options.maxAttempts) return finish('retryable', cls.errorCode, detail);
      if (delay === null) {
        const asked = Math.ceil((retryAfterMs ?? 0) / 1000);
        const cap = Math.round(this.#options.retryAfterCapMs / 1000);
        return finish('retryable', cls.errorCode, `${detail}; Retry-After ${asked} s exceeds the ${cap} s cap`);
      }
      const waited = await sleep(delay, [options.signal, this.#breaker.haltSignal]);
      if (waited === 'aborted') {
        if (this.#breaker.halted) {
          return finish('retryable', 'circuit_open', notSent('the circuit breaker halted after too many consecutive failures'));
        }
        return finish('retryable', 'aborted', notSent('stopped while waiting'));
      }
    }
  }

  /** Passes the shared gates in order: 429 pause, circuit breaker, rate cap (then the pause again). */
  async #admit(signal: AbortSignal | undefined): Promise<BreakerPermit | 'halted' | 'aborted'> {
    const signals = [signal, this.#breaker.haltSignal];
    const outcome = (): 'halted' | 'aborted' => (this.#breaker.halted ? 'halted' : 'aborted');
    if ((await this.#pause.wait(signals)) === 'aborted') return outcome();
    const permit = await this.#breaker.acquire([signal]);
    if (permit === 'halted' || permit === 'aborted') return permit;
    // The breaker may have held this call for a while: a 429 meanwhile pauses it too.
    if ((await this.#rate.acquire(signals)) === 'aborted' || (await this.#pause.wait(signals)) === 'aborted') {
      this.#breaker.release(permit);
      return outcome();
    }
    return permit;
  }

  #feedBreaker(permit: BreakerPermit, cls: AttemptClass): void {
    if (cls.breaker === 'success') this.#breaker.recordSuccess(permit);
    else if (cls.breaker === 'failure') this.#breaker.recordFailure(permit);
    else this.#breaker.release(permit);
  }

  async #send(url: URL, payload: string): Promise<RawAttempt> {
    let response: Response<string>;
    try {
      response = await this.#got.post(url, { body: payload });
    } catch (error) {
      return describeTransportError(error);
    }
    const retryAfter = response.headers['retry-after'];
    return {
      type: 'response',
      status: response.statusCode,
      statusText: response.statusMessage ?? http.STATUS_CODES[response.statusCode] ?? '',
      retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
      text: response.body,
    };
  }

  #parseBody(text: string): unknown {
    const clean = this.#redact(text);
    if (clean.trim() === '') return null;
    try {
      return JSON.parse(clean) as unknown;
    } catch {
      return clean.length > MAX_RAW_BODY ? `${clean.slice(0, MAX_RAW_BODY)}…` : clean;
    }
  }

  /** A partner (or proxy) that echoes the key must not make us store it. */
  #redact(text: string): string {
    return this.#apiKey !== '' && text.includes(this.#apiKey) ? text.split(this.#apiKey).join(REDACTED) : text;
  }
}

/**
 * Reads only what is needed from a got error: its code, a short text and whether the body left.
 * The error itself is dropped because it holds the options (and so the `x-api-key` header).
 */
function describeTransportError(error: unknown): RawAttempt {
  const e = (error ?? {}) as { code?: unknown; message?: unknown; event?: unknown; name?: unknown; timings?: { upload?: number } };
  const code = typeof e.code === 'string' && e.code !== '' ? e.code : 'ERR_REQUEST';
  const event = typeof e.event === 'string' ? e.event : undefined;
  let bodySent = e.timings?.upload !== undefined;
  if (NEVER_LEFT_CODES.has(code) || (event !== undefined && BEFORE_SEND_PHASES.has(event))) bodySent = false;
  let detail: string;
  if (e.name === 'TimeoutError' && event !== undefined) {
    detail = `time-out in the '${event}' phase`;
  } else {
    detail = typeof e.message === 'string' ? e.message.slice(0, 200) : 'request failed';
  }
  return { type: 'transport', code, detail, bodySent };
}

function describe(raw: RawAttempt, body: unknown, cls: AttemptClass): string {
  if (raw.type === 'transport') {
    const sent = cls.outcome === 'in_doubt' ? ' after the body was sent: the partner may have processed it' : '';
    return `${raw.code} (${raw.detail}${sent})`;
  }
  const status = `${raw.status}${raw.statusText === '' ? '' : ` ${raw.statusText}`}`;
  const partnerMessage = readString(body, 'message');
  const code = readString(body, 'error_code');
  const reason = [code, partnerMessage === undefined ? undefined : partnerMessage.slice(0, MAX_PARTNER_MESSAGE)]
    .filter((s): s is string => s !== undefined && s !== '')
    .join(': ');
  return reason === '' ? status : `${status} (${reason})`;
}

function positiveInt(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value >= 1 ? Math.floor(value) : fallback;
}

function nonNegative(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value >= 0 ? value : fallback;
}
