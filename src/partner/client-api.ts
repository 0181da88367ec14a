/**
 * What the partner client offers its callers (the pipeline, the `agents` command): its options,
 * per-call hooks, the events it reports outside of calls, and the {@link PartnerClient} interface.
 * The implementation, with the retry policy of the README's outcomes, is `client.ts`.
 */
import type { AnnouncedSummary } from './announced-limit.js';
import type { BreakerCause, BreakerState } from './circuit-breaker.js';
import type { ConcurrencyLimiter, JobShare } from './limiter/index.js';
import type { MetricsSample } from './metrics.js';
import type { AgentValidateResponse, QuoteSuccessResponse } from './schemas.js';
import type { AttemptRecord, CallOutcome, Operation } from './types.js';

/** Options of `createPartnerClient` (`client.ts`). Each absent one takes its default from `DEFAULTS` (`src/config/defaults.ts`); tests pass small time values. */
export interface PartnerClientOptions {
  /** The environment's base URL; `https://` except on loopback (see `assertSafeBaseUrl`). */
  baseUrl: string;
  /** Sent as `x-api-key`; never appears in an outcome, a message or an error, in any encoding. */
  apiKey: string;
  /** Requests in flight at most (the limiter's ceiling) and keep-alive sockets kept. */
  concurrency?: number;
  /** Decides how many requests may be in flight; default a `FixedLimiter` of `concurrency`. */
  limiter?: ConcurrencyLimiter;
  /** Whole-request time-out in ms; the phase time-outs are derived from it. */
  timeoutMs?: number;
  /** Attempts per call for retryable failures (1 = no retry). */
  maxAttempts?: number;
  /** At most this many attempts per second across the client; 0 = no cap. */
  rate?: number;
  /** Consecutive transient failures of one operation that open its breaker; 0 = never. */
  maxConsecutiveFailures?: number;
  /** Consecutive sends in doubt that open the quote/lead breaker. Default: `concurrency`. */
  maxConsecutiveInDoubt?: number;
  /** Halt when a breaker stays open this long without recovery (ms); 0 = never. */
  maxOutageMs?: number;
  /** A `Retry-After` longer than this (ms) halts the client instead of waiting. */
  maxRetryAfterMs?: number;
  /** First back-off ceiling in ms (full jitter, doubling per attempt). */
  backoffBaseMs?: number;
  /** Largest back-off ceiling in ms. */
  backoffCapMs?: number;
  /** First pause between probes of an open breaker in ms; doubles per failed probe up to a cap. */
  breakerCooldownMs?: number;
  /** Answer bodies are read up to this many bytes (decompressed); the rest is dropped. */
  maxBodyBytes?: number;
  /** Source of jitter in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** Told when a breaker opens or closes, a probe is made, or the client halts (for logs and the ledger). */
  onEvent?: (event: ClientEvent) => void;
  /** The way to the partner: a proxy, extra trusted CAs, a client certificate. Default: straight, Node's roots. */
  network?: NetworkOptions;
}

/**
 * How requests reach the partner (README, "Behind a proxy, with a private CA or a client
 * certificate"). TLS verification is never turned off: `ca` only adds roots.
 */
export interface NetworkOptions {
  /** The proxy to tunnel through (CONNECT), its credentials in the URL; absent: straight. */
  proxy?: string;
  /** PEM certificates to trust for the partner: the whole list (Node's roots are in it when they should be). */
  ca?: string[];
  /** Client certificate (PEM) for mutual TLS, and its key. */
  cert?: string;
  key?: string;
  /** The key's passphrase (a secret: redacted like the key). */
  passphrase?: string;
}

/** What the client tells its caller outside of calls. */
export type ClientEvent =
  | { type: 'breaker_open'; operation: BreakerName; cause: BreakerCause; reason: string; giveUpAt: Date | null }
  | { type: 'breaker_closed'; operation: BreakerName; outageMs: number }
  | { type: 'probe'; attempt: AttemptRecord; email: string; answered: boolean }
  /**
   * `retryAfter`: when the partner may be called again (`retry_after`); `since`: when it began to
   * refuse everything (`refused`); `hint`: what to check (`unreachable`, which names the host).
   */
  | { type: 'halt'; kind: HaltKind; reason: string; retryAfter?: Date; since?: Date; hint?: string }
  /** The partner asked (Retry-After, within --max-retry-after) to wait until `until` before this request is sent again. */
  | { type: 'retry_after'; until: Date }
  /** The partner announced its limit in its headers for the first time this run: sends stay within it. */
  | { type: 'limit_announced'; headers: string; windows: AnnouncedWindowShown[] }
  /** It answered `throttled` of the last `answers` requests sent within that limit 429: the limit is ignored from now on. */
  | { type: 'limit_distrusted'; headers: string; windows: AnnouncedWindowShown[]; throttled: number; answers: number }
  /** Its announced quota is spent: no request leaves before its reset `until` (within --max-retry-after). */
  | { type: 'quota_wait'; until: Date; window: AnnouncedWindowShown };

/** An announced window as events show it: its name, limit, length in seconds and requests left (null: not said). */
export interface AnnouncedWindowShown {
  name: string | null;
  limit: number | null;
  window_s: number | null;
  remaining: number | null;
}

/**
 * Why the client halted: `forbidden` the partner refused the key (401/403); `misrouted` it
 * answered 404/405 or a redirect (base URL or endpoint wrong); `retry_after` it asked to wait longer
 * than `maxRetryAfterMs` (`retryAfter`: when it may be asked again); `outage` a breaker stayed open
 * beyond `maxOutageMs`; `refused` the partner refused every request with 429 for `maxOutageMs` (a
 * spent quota); `in_doubt` too many sends in doubt while the partner was not answering;
 * `unreachable` the base URL has not answered once (its name does not resolve, the connection is
 * refused, TLS fails); `proxy_auth` the proxy refused its credentials (407); `tls_trust` the
 * partner's certificate is not trusted; `tls_client_cert` the partner refused the connection for
 * want of a client certificate it trusts; `quota` the quota the partner announces for this key is spent
 * until a reset beyond `maxRetryAfterMs`.
 */
export type HaltKind = 'forbidden' | 'misrouted' | 'retry_after' | 'outage' | 'refused' | 'in_doubt' | 'unreachable' | 'proxy_auth' | 'tls_trust' | 'tls_client_cert' | 'quota';

/** `validate`: agent validation; `submit`: quote and lead. */
export type BreakerName = 'validate' | 'submit';

/** What `beforeSend` decided: send the attempt, or withdraw the call (`void`: send). */
export type SendDecision = 'send' | 'withdraw' | void;

/** Per-call hooks and cancellation. */
export interface CallOptions {
  /**
   * Aborts the *waiting* (back-off, breaker, limiter, rate cap): the call then returns `retryable`
   * with errorCode `aborted` without sending. A request already on the wire is never aborted: its
   * answer is still awaited and recorded.
   */
  signal?: AbortSignal;
  /**
   * Called right before each attempt leaves, after all waits, and awaited: the pipeline durably
   * marks the row `in_flight` here. `withdraw` (the caller settled the row meanwhile, e.g. another
   * job sent its lead): nothing is sent, and the call returns `retryable` with errorCode `withdrawn`.
   * If it throws (or rejects), nothing is sent and the call rejects with that error.
   */
  beforeSend?: (attempt: number) => SendDecision | Promise<SendDecision>;
  /** Called after each attempt with its record (also found in `outcome.attempts`). */
  onAttempt?: (attempt: AttemptRecord) => void;
  /**
   * Called when the call will send its request again, with the record of the attempt that did not
   * take (answered with a refusal the client retries, such as a 429, or never sent), and awaited
   * before the back-off or `Retry-After` wait begins. The pipeline takes the row out of `in_flight`
   * here: a run killed while it waits leaves the row to be sent again, not in doubt. If it throws
   * (or rejects), the call rejects with that error.
   */
  beforeRetry?: (attempt: AttemptRecord) => void | Promise<void>;
}

export interface PartnerClient {
  /** `POST /account/v1/agent/validate` (a read: every transport failure is retried). */
  validateAgent(email: string, options?: CallOptions): Promise<CallOutcome<AgentValidateResponse>>;
  /** `POST /partner/v2/policy/quote|lead` (a write: not resent once the body may have arrived). */
  submit(operation: Operation, body: unknown, options?: CallOptions): Promise<CallOutcome<QuoteSuccessResponse>>;
  /** Like {@link submit}, with the body already serialised (the pipeline checks its size first). */
  submitJson(operation: Operation, json: string, options?: CallOptions): Promise<CallOutcome<QuoteSuccessResponse>>;
  /** True once the client halted: every later call returns `retryable`/`halted` unsent. */
  readonly halted: boolean;
  /** Why it halted (one line, no secret), or null. */
  readonly haltReason: string | null;
  /** What kind of halt that was (see {@link HaltKind}), or null. */
  readonly haltKind: HaltKind | null;
  /** For a halt on a Retry-After over `maxRetryAfterMs`, or on a spent quota: when the partner may be called again; else null. */
  readonly haltRetryAfter: Date | null;
  /**
   * Holds every call until `until`, which the partner gave an earlier run (`who`, for the message) in
   * a Retry-After, or as the reset of its quota that run spent (`why`); halts at once instead (that
   * kind of halt) when that is more than `maxRetryAfterMs` away.
   */
  holdUntil(until: Date, who: string, why?: 'retry_after' | 'quota'): 'none' | 'held' | 'halted';
  /** The quote/lead breaker's state (`validate` for agent validation's). */
  breakerState(name?: BreakerName): BreakerState;
  /** Requests allowed in flight now, requests in flight, and what was answered since the last sample. */
  takeSample(): MetricsSample;
  /** What the partner announced of its limit this run (see `announced-limit.ts`); null when it announced nothing. */
  announcedLimit(): AnnouncedSummary | null;
  /**
   * Where the limiter stands now, without taking a sample: requests allowed in flight, requests/s
   * paced at (or null), of that the rate learned from 429s (or null), and the partner's latency
   * without a queue as the window measured it (or null).
   */
  limiterState(): { limit: number; pace: number | null; learnedPace: number | null; baselineMs: number | null };
  /** This worker's share of its job's limit, when several workers share one (PostgreSQL ledger). */
  shareLimit(share: JobShare): void;
  /** Destroys the keep-alive sockets and stops probing. */
  close(): void;
}
