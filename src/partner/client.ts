/**
 * The partner HTTP client: the retry policy of the README's outcomes on top of one keep-alive got
 * instance, which runs on a thread of its own (`thread-transport.ts`). Every call returns a
 * classified {@link CallOutcome}; a per-request failure is never thrown, and nothing it returns
 * holds the API key (in any encoding) or got's error objects.
 *
 * Every attempt passes, in order: its operation's circuit breaker (closed, or the single trial
 * while half-open), the concurrency limiter (adaptive or fixed), and the `--rate` cap. While a
 * breaker is open the client probes the partner with agent validation (a read, never a quote),
 * and halts for good when the outage outlasts `maxOutageMs`. A key or endpoint the partner refuses
 * (401/403, 404/405, a redirect) and a `Retry-After` beyond `maxRetryAfterMs` halt it at once.
 */
import { DEFAULTS } from '../config/defaults.js';
import type { ZodType } from 'zod';
import { formatDuration } from '../duration.js';
import { describeAttempt, failureText, haltOf, parseAnswerBody, statusOf, type HaltContext, type Parsed } from './_answer-text.js';
import { classifyAnswer, type AttemptClass, type Unreachable } from './_classify.js';
import { sleep } from './_sleep.js';
import { AnnouncedLimit, quotaSpentReason, type AnnouncedSummary, type SendTicket } from './announced-limit.js';
import { ThreadTransport } from './thread-transport.js';
import type { RawAttempt } from './_transport.js';
import { calculateRetryDelay, parseRetryAfter } from './backoff.js';
import { assertSafeBaseUrl, displayUrl, joinUrl } from './base-url.js';
import { CircuitBreaker, type BreakerPermit, type BreakerState } from './circuit-breaker.js';
import { FixedLimiter, RateLimiter, type AttemptSample, type ConcurrencyLimiter, type ConcurrencySlot, type JobShare } from './limiter/index.js';
import { CallMetrics, type MetricsSample } from './metrics.js';
import { displayProxy } from './proxy.js';
import { parseRateLimitHeaders } from './rate-limit-headers.js';
import { networkSecrets, Redactor } from './redact.js';
import { AgentValidateResponse, QuoteSuccessResponse } from './schemas.js';
import type { AttemptKind, AttemptRecord, CallOutcome, Operation, OutcomeKind } from './types.js';
import type { BreakerName, CallOptions, ClientEvent, HaltKind, PartnerClient, PartnerClientOptions, SendDecision } from './client-api.js';

const PATHS: Readonly<Record<AttemptKind, string>> = {
  agent_validate: '/account/v1/agent/validate',
  quote: '/partner/v2/policy/quote',
  lead: '/partner/v2/policy/lead',
};
/** How long a request waits for those let through before it to leave, when they take what is left of an announced quota. */
const SETTLING_MS = 10;
/** A read the partner can answer whatever it knows of the agent (400 for a bad address is an answer too). */
const FALLBACK_PROBE_EMAIL = 'quote-batch-probe@example.com';

export function createPartnerClient(options: PartnerClientOptions): PartnerClient {
  return new GotPartnerClient(options);
}

interface Normalised {
  timeoutMs: number;
  maxAttempts: number;
  maxRetryAfterMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  random: () => number;
}


class GotPartnerClient implements PartnerClient {
  readonly #options: Normalised;
  /** Each operation's URL and its label in messages, made once (got copies the URL it is given). */
  readonly #endpoints: Readonly<Record<AttemptKind, { url: URL; label: string }>>;
  readonly #redactor: Redactor;
  readonly #transport: ThreadTransport;
  readonly #limiter: ConcurrencyLimiter;
  readonly #rate: RateLimiter;
  /** What the partner announces of our limit in its headers: the pace's ceiling, and its quota's gate. */
  readonly #announced: AnnouncedLimit;
  /** The last reset waited for (ms since the epoch), so that one wait is told once. */
  #announcedWaitUntil = 0;
  readonly #breakers: Readonly<Record<BreakerName, CircuitBreaker>>;
  readonly #metrics = new CallMetrics();
  readonly #halt = new AbortController();
  readonly #closed = new AbortController();
  readonly #onEvent: (event: ClientEvent) => void;
  #haltReason: string | null = null;
  #haltKind: HaltKind | null = null;
  #probing = false;
  #probeEmail = FALLBACK_PROBE_EMAIL;
  /** True once any request of this client got an HTTP answer (of any status): the address is right. */
  #reached = false;
  /** No request leaves before this (epoch ms): a Retry-After an earlier run was given ({@link holdUntil}). */
  #heldUntilMs = 0;
  /** When the partner may be called again, for a client a Retry-After halted. */
  #haltRetryAfter: Date | null = null;
  /** The last transient failure ("its last answer 500 Internal Server Error"), for the outage's halt. */
  #lastFailure: string | undefined;
  /** Whether that failure was a request sent and not answered within --timeout: a slow partner, not a closed port. */
  #lastFailureTimedOut = false;
  /** Whether that failure was the proxy's (no tunnel to the partner). */
  #lastFailureAtProxy = false;
  /** The base URL as messages show it. */
  readonly #baseShown: string;
  /** The proxy as messages show it (no credentials), or undefined: straight to the partner. */
  readonly #proxyShown: string | undefined;
  /** What the halts' wording needs (`haltOf`). */
  readonly #haltContext: Omit<HaltContext, 'path' | 'when'>;
  /** "within --timeout (30s)", as messages about requests left unanswered say it. */
  readonly #withinTimeout: string;

  constructor(options: PartnerClientOptions) {
    const base = assertSafeBaseUrl(options.baseUrl);
    this.#baseShown = displayUrl(base);
    const endpoint = (kind: AttemptKind): { url: URL; label: string } => {
      const url = joinUrl(base, PATHS[kind]);
      return { url, label: `POST ${displayUrl(url)}` };
    };
    this.#endpoints = { agent_validate: endpoint('agent_validate'), quote: endpoint('quote'), lead: endpoint('lead') };
    this.#redactor = new Redactor(options.apiKey, networkSecrets(options.network));
    const proxy = options.network?.proxy === undefined ? undefined : new URL(options.network.proxy);
    this.#proxyShown = proxy === undefined ? undefined : displayProxy(proxy);
    this.#haltContext = {
      baseShown: this.#baseShown, proxyShown: this.#proxyShown,
      proxyHasCredentials: proxy !== undefined && (proxy.username !== '' || proxy.password !== ''), hasClientCert: options.network?.cert !== undefined,
    };
    const concurrency = positiveInt(options.concurrency, DEFAULTS.concurrency);
    const timeoutMs = positiveInt(options.timeoutMs, DEFAULTS.timeoutMs);
    this.#withinTimeout = `within --timeout (${formatDuration(timeoutMs)})`;
    this.#options = {
      timeoutMs,
      maxAttempts: positiveInt(options.maxAttempts, DEFAULTS.maxAttempts),
      maxRetryAfterMs: nonNegative(options.maxRetryAfterMs, DEFAULTS.maxRetryAfterMs),
      backoffBaseMs: nonNegative(options.backoffBaseMs, DEFAULTS.backoffBaseMs),
      backoffCapMs: nonNegative(options.backoffCapMs, DEFAULTS.backoffCapMs),
      random: options.random ?? Math.random,
    };
    const onEvent = options.onEvent ?? (() => {});
    // Nothing is reported once the caller closed the client (its ledger may be closed too).
    this.#onEvent = (event) => {
      if (!this.#closed.signal.aborted) onEvent(event);
    };
    this.#limiter = options.limiter ?? new FixedLimiter(concurrency);
    this.#rate = new RateLimiter(nonNegative(options.rate, DEFAULTS.rate));
    this.#announced = new AnnouncedLimit({ maxRetryAfterMs: this.#options.maxRetryAfterMs });
    const maxOutageMs = nonNegative(options.maxOutageMs, DEFAULTS.maxOutageMs);
    const maxConsecutiveInDoubt = positiveInt(options.maxConsecutiveInDoubt, concurrency);
    const breaker = (openAfterInDoubt: number): CircuitBreaker => new CircuitBreaker({
      openAfterFailures: nonNegative(options.maxConsecutiveFailures, DEFAULTS.maxConsecutiveFailures),
      openAfterInDoubt,
      cooldownMs: nonNegative(options.breakerCooldownMs, DEFAULTS.breakerCooldownMs),
      maxCooldownMs: DEFAULTS.breakerMaxCooldownMs,
      maxOutageMs,
    });
    this.#breakers = { validate: breaker(0), submit: breaker(maxConsecutiveInDoubt) };
    const inDoubtBudget = 2 * maxConsecutiveInDoubt;
    for (const [name, b] of Object.entries(this.#breakers) as [BreakerName, CircuitBreaker][]) {
      b.gaveUpSignal.addEventListener('abort', () => {
        const what = name === 'submit' ? 'quotes/leads' : 'agent validation';
        if (b.gaveUpBecause === 'refused') {
          const since = new Date(Date.now() - b.outageMs());
          this.#haltWith('refused', `the partner has refused every request with 429 since ${clockTime(since)} (${formatDuration(b.outageMs())}; ${what}): its quota for this key may be spent; run again later`, undefined, since);
        } else if (b.gaveUpBecause === 'in_doubt') {
          this.#haltWith('in_doubt', `${inDoubtBudget} requests in doubt since the partner stopped answering ${what} (at most 2 × --concurrency): halting rather than risk more`);
        } else {
          const last = this.#lastFailure === undefined ? '' : `; ${this.#lastFailure}`;
          this.#haltWith('outage', `the partner did not recover within --max-outage (${formatDuration(maxOutageMs)}; ${what} failing for ${formatDuration(b.outageMs())}${last})${this.#neverAnswered()}`);
        }
      }, { once: true });
    }
    this.#transport = new ThreadTransport({
      apiKey: options.apiKey, sockets: concurrency, timeoutMs, maxBodyBytes: positiveInt(options.maxBodyBytes, DEFAULTS.maxBodyBytes),
      ...(options.network === undefined ? {} : { network: options.network }),
    });
  }

  get halted(): boolean {
    return this.#halt.signal.aborted;
  }

  get haltReason(): string | null {
    return this.#haltReason;
  }

  get haltKind(): HaltKind | null {
    return this.#haltKind;
  }

  /** For a client halted by a Retry-After longer than --max-retry-after: when the partner may be called again. */
  get haltRetryAfter(): Date | null {
    return this.#haltRetryAfter;
  }

  /**
   * Holds every request until `until`, when the partner asked an earlier run (`who`) not to call it
   * before then: a run started again at once (a retry-on-failure wrapper, an impatient user) must not
   * call early. A wait longer than --max-retry-after halts the client instead, as the Retry-After
   * itself would have. Returns what it did.
   */
  holdUntil(until: Date, who: string, why: 'retry_after' | 'quota' = 'retry_after'): 'none' | 'held' | 'halted' {
    const waitMs = until.getTime() - Date.now();
    if (waitMs <= 0 || this.halted) return 'none';
    if (waitMs > this.#options.maxRetryAfterMs) {
      const over = `${formatDuration(waitMs)} from now (over --max-retry-after ${formatDuration(this.#options.maxRetryAfterMs)}): nothing sent; run again after ${until.toISOString()}`;
      this.#haltWith(why, why === 'quota'
        ? `the partner's quota for this key is spent until ${until.toISOString()} (as ${who} found), ${over}`
        : `the partner asked ${who} to wait until ${until.toISOString()}, ${over}`, until);
      return 'halted';
    }
    this.#heldUntilMs = Math.max(this.#heldUntilMs, until.getTime());
    return 'held';
  }

  breakerState(name: BreakerName = 'submit'): BreakerState {
    return this.#breakers[name].state;
  }

  announcedLimit(): AnnouncedSummary | null {
    return this.#announced.summary();
  }

  limiterState(): { limit: number; pace: number | null; learnedPace: number | null; baselineMs: number | null } {
    return { limit: this.#limiter.limit, pace: this.#limiter.rate, learnedPace: this.#limiter.learnedRate ?? this.#limiter.rate, baselineMs: this.#limiter.baselineMs ?? null };
  }

  shareLimit(share: JobShare): void {
    this.#limiter.share?.(share);
  }

  takeSample(): MetricsSample {
    const inFlight = this.#limiter.takeInFlight();
    return this.#metrics.take(this.#limiter.limit, inFlight.mean, inFlight.peak, this.#limiter.rate, this.#announced.ceiling());
  }

  // async, so that even a programming error arrives as a rejection.
  async validateAgent(email: string, options: CallOptions = {}): Promise<CallOutcome<AgentValidateResponse>> {
    this.#probeEmail = email;
    return this.#call('agent_validate', JSON.stringify({ email }), AgentValidateResponse, options);
  }

  async submit(operation: Operation, body: unknown, options: CallOptions = {}): Promise<CallOutcome<QuoteSuccessResponse>> {
    return this.submitJson(operation, JSON.stringify(body), options);
  }

  async submitJson(operation: Operation, json: string, options: CallOptions = {}): Promise<CallOutcome<QuoteSuccessResponse>> {
    if (operation !== 'quote' && operation !== 'lead') throw new TypeError(`unknown partner operation "${String(operation)}"`);
    return this.#call(operation, json, QuoteSuccessResponse, options);
  }

  close(): void {
    this.#closed.abort();
    for (const b of Object.values(this.#breakers)) b.dispose();
    this.#transport.close();
  }

  async #call<T>(kind: AttemptKind, payload: string, schema: ZodType<T>, options: CallOptions): Promise<CallOutcome<T>> {
    const started = performance.now();
    const { label } = this.#endpoints[kind];
    const breaker = this.#breakers[kind === 'agent_validate' ? 'validate' : 'submit'];
    const attempts: AttemptRecord[] = [];
    let last: { raw: RawAttempt; cls: AttemptClass; parsed: Parsed } | undefined;
    let lastDetail: string | undefined;

    const finish = (kindOut: OutcomeKind, errorCode: string | null, detail: string, extra: { halt?: string } = {}): CallOutcome<T> => {
      const body = last?.parsed.body ?? null;
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
        errorCode: errorCode === null ? null : this.#redactor.redact(errorCode),
        message: this.#redactor.redact(`${label}: ${detail}${tries}`.replace(/[\r\n]+/g, ' ')),
        storedBody: last?.parsed.stored ?? null,
        warning: kindOut === 'ok' ? last?.cls.warning : undefined,
        halt: extra.halt,
        durationMs: Math.round(performance.now() - started),
        attempts,
      };
    };
    const notSent = (why: string): string => (lastDetail === undefined ? `not sent: ${why}` : `${lastDetail}; not retried: ${why}`);
    // A wait cut short, by a halt of the client or by the caller's signal: the request does not leave.
    const cutShort = (why: 'halted' | 'aborted'): CallOutcome<T> => (why === 'halted'
      ? finish('retryable', 'halted', notSent(this.#haltReason ?? 'the client halted'))
      : finish('retryable', 'aborted', notSent('stopped while waiting')));
    // Attempts that count toward --max-attempts. A failure while a breaker is open (of this operation
    // or the other: the partner is known to be down) is the partner's outage, not this request's, and
    // does not use the row's attempts up: the call keeps retrying, and waits behind its own breaker
    // once that opens too; --max-outage bounds the wait. Otherwise a request uses its attempts up.
    let counted = 0;
    let acceptedBefore = breaker.accepted;

    for (let attempt = 1; ; attempt += 1) {
      if (this.#heldUntilMs > Date.now() && (await sleep(this.#heldUntilMs - Date.now(), [options.signal, this.#halt.signal])) === 'aborted') {
        return cutShort(this.halted ? 'halted' : 'aborted');
      }
      const admitted = await this.#admit(breaker, options.signal);
      if (admitted === 'halted' || admitted === 'aborted') return cutShort(admitted);
      const { permit, slot } = admitted;
      // The partner's announced quota, spent: held until its reset, or halted when that is too far.
      const allowed = this.#announcedAllows();
      if (allowed !== 'send') {
        slot.release({ latencyMs: 0, signal: 'dropped' });
        breaker.release(permit);
        if (this.halted) return cutShort('halted');
        // What is left is taken by requests let through that have not left yet: this one goes if they do not.
        if (allowed === 'settling' && (await sleep(SETTLING_MS, [options.signal, this.#halt.signal])) === 'aborted') return cutShort(this.halted ? 'halted' : 'aborted');
        attempt -= 1;
        continue;
      }
      // Counted as it passes the gate (the ledger's mark is awaited below): others waiting see it spent.
      const ticket = this.#announced.reserve();

      let decision: SendDecision;
      try {
        decision = await options.beforeSend?.(attempt);
      } catch (error) {
        ticket.cancel();
        slot.release({ latencyMs: 0, signal: 'dropped' });
        breaker.release(permit);
        throw error;
      }
      if (decision === 'withdraw') {
        ticket.cancel();
        slot.release({ latencyMs: 0, signal: 'dropped' });
        breaker.release(permit);
        return finish('retryable', 'withdrawn', notSent('withdrawn by the caller'));
      }
      // beforeSend awaited a ledger commit: a halt or an opening breaker meanwhile stops this send.
      if (!breaker.allows(permit) || this.halted) {
        ticket.cancel();
        slot.release({ latencyMs: 0, signal: 'dropped' });
        breaker.release(permit);
        attempt -= 1;
        continue;
      }
      slot.sent();
      ticket.depart(this.#pacesAnnounced());
      const { raw, parsed, cls, record } = await this.#attempt(kind, payload, ticket);
      last = { raw, cls, parsed };
      slot.release({ latencyMs: record.durationMs, signal: limiterSignal(cls), timed: kind !== 'agent_validate' });
      const retryAfterMs = raw.type === 'response' ? parseRetryAfter(raw.retryAfter, Date.now()) : undefined;
      this.#feedBreaker(kind, breaker, permit, cls, retryAfterMs);
      attempts.push(record);
      options.onAttempt?.(record);

      const detail = describeAttempt(raw, parsed.body, cls);
      lastDetail = detail;
      // Before anything of this run answered, an address that does not resolve, refuses the
      // connection or fails TLS is a mistake in the base URL, not an outage to wait out.
      if (cls.unreachable !== undefined && !this.#reached) {
        const { reason, hint } = unreachableAdvice(cls.unreachable, this.#baseShown, statusOf(raw));
        this.#haltWith('unreachable', reason, undefined, undefined, hint);
        return finish('retryable', cls.errorCode, detail, { halt: reason });
      }
      if (cls.outcome === 'forbidden' || cls.outcome === 'misrouted') {
        const { kind: haltKind, reason } = this.#haltFor(cls, raw, kind, '');
        this.#haltWith(haltKind, reason);
        return finish(cls.outcome, cls.errorCode, detail, { halt: reason });
      }
      if (!cls.retry) return finish(cls.outcome, cls.errorCode, detail);
      // A refusal that spent the announced quota halts as the quota's, not as its Retry-After's.
      if (this.#announcedAllows() === 'halted') return finish('retryable', cls.errorCode, detail, { halt: this.#haltReason ?? undefined });
      if (retryAfterMs !== undefined && retryAfterMs > this.#options.maxRetryAfterMs) {
        const until = new Date(Date.now() + retryAfterMs);
        const reason = `the partner asks to wait ${formatDuration(retryAfterMs)} (Retry-After, over --max-retry-after ${formatDuration(this.#options.maxRetryAfterMs)}); run again after ${until.toISOString()}`;
        this.#haltWith('retry_after', reason, until);
        return finish('retryable', cls.errorCode, `${detail}; Retry-After ${formatDuration(retryAfterMs)}`, { halt: reason });
      }
      // A 429 while the partner accepted nothing since this request last went out is its refusing
      // everyone (a spent quota, which the breaker meets), not this request's turn: it is not counted.
      const refusingAll = cls.breaker === 'refused' && breaker.accepted === acceptedBefore;
      acceptedBefore = breaker.accepted;
      const outage = (cls.breaker === 'failure' && Object.values(this.#breakers).some((b) => b.state !== 'closed')) || refusingAll;
      if (!outage) counted += 1;
      if (counted >= this.#options.maxAttempts) return finish('retryable', cls.errorCode, detail);
      const delay = calculateRetryDelay({
        attempt,
        retryAfterMs,
        baseMs: this.#options.backoffBaseMs,
        capMs: this.#options.backoffCapMs,
        retryAfterCapMs: this.#options.maxRetryAfterMs,
        random: this.#options.random,
      }) ?? 0;
      if (retryAfterMs !== undefined && retryAfterMs > 0) this.#onEvent({ type: 'retry_after', until: new Date(Date.now() + retryAfterMs) });
      await options.beforeRetry?.(record);
      // Only this request waits: the limiter has been told (throttled) and shrinks for everyone.
      const waited = await sleep(delay, [options.signal, this.#halt.signal]);
      if (waited === 'aborted') return cutShort(this.halted ? 'halted' : 'aborted');
    }
  }

  /** Passes the operation's breaker, the limiter and the rate cap, in this order. */
  async #admit(breaker: CircuitBreaker, signal: AbortSignal | undefined): Promise<{ permit: BreakerPermit; slot: ConcurrencySlot } | 'halted' | 'aborted'> {
    const signals = [signal, this.#halt.signal];
    const stopped = (): 'halted' | 'aborted' => (this.halted ? 'halted' : 'aborted');
    // Each round either returns or waits; a permit lost to a breaker that opened meanwhile is retried.
    for (;;) {
      if (this.halted) return 'halted';
      const permit = await breaker.acquire(signals);
      if (permit === 'gave_up') return 'halted';
      if (permit === 'aborted') return stopped();
      // A permit of the closed breaker stops waiting for a slot when it opens: the calls queued
      // for the limiter's pace would otherwise each take their turn before the trial.
      const slot = await this.#limiter.acquire(permit.trial ? signals : [...signals, breaker.closedSignal]);
      if (slot === 'aborted') {
        breaker.release(permit);
        if (!this.halted && signals.every((s) => s?.aborted !== true)) continue;
        return stopped();
      }
      if (!breaker.allows(permit)) {
        slot.release({ latencyMs: 0, signal: 'dropped' });
        breaker.release(permit);
        continue;
      }
      if ((await this.#rate.acquire(permit.trial ? signals : [...signals, breaker.closedSignal])) === 'aborted') {
        slot.release({ latencyMs: 0, signal: 'dropped' });
        breaker.release(permit);
        if (!this.halted && signals.every((s) => s?.aborted !== true)) continue;
        return stopped();
      }
      // The rate cap may have held it a while: the breaker may have opened, the client halted.
      if (!breaker.allows(permit) || this.halted) {
        slot.release({ latencyMs: 0, signal: 'dropped' });
        breaker.release(permit);
        continue;
      }
      return { permit, slot };
    }
  }

  #feedBreaker(kind: AttemptKind, breaker: CircuitBreaker, permit: BreakerPermit, cls: AttemptClass, retryAfterMs: number | undefined): void {
    const name: BreakerName = kind === 'agent_validate' ? 'validate' : 'submit';
    if (cls.breaker === 'success') {
      const closed = breaker.recordSuccess(permit);
      if (closed !== null) this.#onEvent({ type: 'breaker_closed', operation: name, outageMs: Math.round(closed.closedAfterMs) });
    } else if (cls.breaker === 'failure' || cls.breaker === 'in_doubt' || cls.breaker === 'refused') {
      const detail = cls.errorCode ?? undefined;
      const opening = cls.breaker === 'refused'
        ? breaker.recordRefusal(permit, { retryAfterMs, detail })
        : breaker.recordFailure(permit, { inDoubt: cls.breaker === 'in_doubt', detail });
      if (opening !== null) {
        const giveUpAt = Number.isFinite(opening.giveUpAt) ? new Date(Date.now() + (opening.giveUpAt - performance.now())) : null;
        const never = opening.cause === 'refusals' ? '' : this.#neverAnswered();
        this.#onEvent({ type: 'breaker_open', operation: name, cause: opening.cause, reason: `${this.#redactor.redact(opening.reason)}${never}`, giveUpAt });
      }
      // Opened, or opened again by a failed trial: someone must probe.
      if (breaker.state === 'open') void this.#probeLoop();
    } else {
      breaker.release(permit);
    }
  }

  /**
   * While a breaker is open: waits for its next probe time, asks the partner something harmless
   * (agent validation), and moves the breakers on. Ends when none is open, or the client halts.
   */
  async #probeLoop(): Promise<void> {
    if (this.#probing) return;
    this.#probing = true;
    const stops = [this.#halt.signal, this.#closed.signal];
    try {
      for (;;) {
        const open = Object.values(this.#breakers).filter((b) => b.state === 'open' && !b.gaveUp);
        if (open.length === 0 || this.halted || this.#closed.signal.aborted) return;
        const at = Math.min(...open.map((b) => b.nextProbeAt));
        if ((await sleep(at - performance.now(), stops)) === 'aborted') return;
        if (!this.#anyOpen()) return;
        if ((await this.#rate.acquire(stops)) === 'aborted') return;
        const answered = await this.#probe();
        for (const [name, b] of Object.entries(this.#breakers) as [BreakerName, CircuitBreaker][]) {
          if (b.state !== 'open') continue;
          if (!answered) {
            b.probeFailed();
            continue;
          }
          // A readable validation is a success of the validate operation itself; for quotes it only
          // lets one trial quote through.
          const closed = b.probeSucceeded({ closes: name === 'validate' });
          if (closed !== null) this.#onEvent({ type: 'breaker_closed', operation: name, outageMs: Math.round(closed.closedAfterMs) });
        }
      }
    } finally {
      this.#probing = false;
    }
  }

  /** True while a breaker is open (and has not given up): the prober has work. */
  #anyOpen(): boolean {
    return Object.values(this.#breakers).some((b) => b.state === 'open' && !b.gaveUp);
  }

  /** One probe: agent validation of the last e-mail validated. True when the partner answered sensibly. */
  async #probe(): Promise<boolean> {
    const email = this.#probeEmail;
    const { raw, cls, record: attempt } = await this.#attempt('agent_validate', JSON.stringify({ email }), this.#announced.sent());
    const answered = cls.breaker === 'success';
    this.#onEvent({ type: 'probe', attempt, email, answered });
    if (cls.outcome === 'forbidden' || cls.outcome === 'misrouted') {
      const { kind: haltKind, reason } = this.#haltFor(cls, raw, 'agent_validate', ' while probing');
      this.#haltWith(haltKind, reason);
    }
    return answered;
  }

  /** The halt an attempt classified `forbidden` or `misrouted` calls for, and its reason (one line, no secret). */
  #haltFor(cls: AttemptClass, raw: RawAttempt, kind: AttemptKind, when: string): { kind: HaltKind; reason: string } {
    return haltOf(cls, raw, { ...this.#haltContext, path: PATHS[kind], when });
  }

  /**
   * One attempt on the wire, for a call or a probe alike: sends, reads the answer (redacted),
   * classifies it and counts it in the metrics. What follows (retry, breaker, limiter) is the caller's.
   */
  async #attempt(kind: AttemptKind, payload: string, ticket: SendTicket): Promise<{ raw: RawAttempt; parsed: Parsed; cls: AttemptClass; record: AttemptRecord }> {
    const sentAtMs = Date.now();
    const startedAt = new Date(sentAtMs).toISOString();
    const t0 = performance.now();
    const raw = await this.#transport.post(this.#endpoints[kind].url, payload);
    const durationMs = Math.round(performance.now() - t0);
    if (raw.type === 'response') this.#reached = true;
    const parsed = raw.type === 'response' ? parseAnswerBody(raw.redacted === true ? raw.text : this.#redactor.redact(raw.text), raw.truncated, raw.bytes, raw.bodyError) : { body: null, stored: null };
    const cls = classifyAnswer(kind, raw.type === 'response'
      ? { type: 'response', status: raw.status, body: parsed.body, bodyError: raw.bodyError }
      : raw);
    if (raw.type === 'response') this.#heardAnnouncement(ticket, raw.rateLimit, sentAtMs, cls.throttled);
    this.#metrics.record(durationMs, cls, kind !== 'agent_validate');
    if (cls.breaker === 'failure' || cls.breaker === 'in_doubt') {
      this.#lastFailureTimedOut = raw.type === 'transport' && raw.code === 'ETIMEDOUT' && raw.bodySent;
      this.#lastFailureAtProxy = raw.type === 'transport' && raw.proxy !== undefined;
      this.#lastFailure = failureText(raw, this.#withinTimeout, this.#proxyShown);
    }
    const record: AttemptRecord = {
      kind,
      startedAt,
      durationMs,
      httpStatus: raw.type === 'response' ? raw.status : null,
      errorCode: cls.errorCode === null ? null : this.#redactor.redact(cls.errorCode),
      outcome: cls.outcome,
    };
    return { raw, parsed, cls, record };
  }

  /**
   * Said after an outage's reason while no request of this client has had an answer: a partner that
   * never answered may be the wrong address (a typo in --base-url, a closed port) rather than down.
   */
  #neverAnswered(): string {
    if (this.#reached) return '';
    // The way out failed, not (as far as anyone knows) the partner: its address is not in question.
    if (this.#lastFailureAtProxy) return `; no request of this run has got through the proxy ${this.#proxyShown ?? ''} to ${this.#baseShown}: check the proxy, or whether it lets this host reach the partner`;
    const none = `; no request of this run has had an answer from ${this.#baseShown}`;
    // The request left and the connection held: the partner may just be slower than --timeout.
    if (this.#lastFailureTimedOut) return `${none} ${this.#withinTimeout}: if the partner is that slow, raise --timeout; if that address is wrong, fix --base-url (or --env)`;
    return `${none}: if that address is wrong, fix --base-url (or --env)`;
  }

  /**
   * What an answer announced (its resets count from when its request left, as the partner counted
   * it on arrival), and what that changed: said once, as events.
   */
  #heardAnnouncement(ticket: SendTicket, headers: Record<string, string> | undefined, sentAtMs: number, throttled: boolean): void {
    const announcement = headers === undefined ? null : parseRateLimitHeaders(headers, sentAtMs);
    for (const change of this.#announced.answered(ticket, announcement, throttled)) {
      const windows = change.windows.map((w) => ({ name: w.name === null ? null : this.#redactor.redact(w.name), limit: w.limit, window_s: w.windowS ?? (w.longestResetS > 0 ? w.longestResetS : null), remaining: w.remaining }));
      this.#onEvent(change.type === 'announced'
        ? { type: 'limit_announced', headers: change.headers, windows }
        : { type: 'limit_distrusted', headers: change.headers, windows, throttled: change.throttled, answers: change.answers });
    }
    // Every answer: a quota's remainder spread over what is left of its window moves with time.
    this.#limiter.announceCeiling?.(this.#announced.ceiling());
  }

  /** Whether a pace holds the sends to the partner's announced rate: a limiter that takes it (not `--no-adaptive`'s fixed one). */
  #pacesAnnounced(): boolean {
    return this.#limiter.announceCeiling !== undefined;
  }

  /**
   * Whether the announced limit lets a request leave now. A spent quota whose reset is within
   * --max-retry-after holds every request until then (told once, as a Retry-After is, so that other
   * workers of the job wait too); one further away halts the client (`quota`).
   */
  #announcedAllows(): 'send' | 'settling' | 'held' | 'halted' {
    const gate = this.#announced.gate();
    if (gate.kind === 'send' || gate.kind === 'settling') return gate.kind;
    const until = new Date(Date.now() + Math.max(0, gate.until - performance.now()));
    if (gate.kind === 'spent') {
      this.#announced.spent(until);
      this.#haltWith('quota', quotaSpentReason(gate.window, this.#announced.summary()?.headers ?? '', until, this.#options.maxRetryAfterMs), until);
      return 'halted';
    }
    this.#heldUntilMs = Math.max(this.#heldUntilMs, until.getTime());
    if (until.getTime() > this.#announcedWaitUntil + 1000) {
      this.#announcedWaitUntil = until.getTime();
      this.#onEvent({ type: 'quota_wait', until, window: { name: gate.window.name, limit: gate.window.limit, window_s: gate.window.windowS ?? (gate.window.longestResetS > 0 ? gate.window.longestResetS : null), remaining: 0 } });
      this.#onEvent({ type: 'retry_after', until });
    }
    return 'held';
  }

  #haltWith(kind: HaltKind, reason: string, retryAfter?: Date, since?: Date, hint?: string): void {
    if (this.halted) return;
    this.#haltReason = this.#redactor.redact(reason);
    this.#haltKind = kind;
    this.#haltRetryAfter = retryAfter ?? null;
    this.#halt.abort();
    this.#onEvent({
      type: 'halt', kind, reason: this.#haltReason,
      ...(retryAfter === undefined ? {} : { retryAfter }), ...(since === undefined ? {} : { since }), ...(hint === undefined ? {} : { hint }),
    });
  }
}

/** `01:12`: a time of day as the operator's clock shows it (the process's time zone). */
function clockTime(at: Date): string {
  return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
}

/**
 * The halt of a run whose base URL never answered (see {@link Unreachable}): what failed, naming the
 * address, and what to check. `failure`: the transport's code (`ENOTFOUND`).
 */
export function unreachableAdvice(why: Unreachable, base: string, failure: string): { reason: string; hint: string } {
  const host = hostOf(base);
  const where = '--base-url, --env, QUOTE_BATCH_*_URL or the config file';
  switch (why) {
    case 'name':
      return {
        reason: `the base URL ${base} has not answered once in this run: its host name ${host} does not resolve (${failure})`,
        hint: `check the spelling of ${host} (${where}) and that this machine resolves it (DNS, /etc/hosts), then run the same command again`,
      };
    case 'refused':
      return {
        reason: `the base URL ${base} has not answered once in this run: ${host} refused the connection (${failure})`,
        hint: `check the port of ${host} (${where}) and that the partner's service listens there, then run the same command again`,
      };
    case 'tls':
      return {
        reason: `the base URL ${base} has not answered once in this run: TLS with ${host} failed (${failure})`,
        hint: `check that ${base} is the partner's https endpoint (not a plain HTTP port) and speaks TLS 1.2 or later (${where}); quote-batch never turns verification off`,
      };
  }
}

function hostOf(base: string): string {
  try {
    return new URL(base).host;
  } catch {
    return base;
  }
}

function limiterSignal(cls: AttemptClass): AttemptSample['signal'] {
  if (cls.throttled) return 'throttled';
  if (cls.breaker === 'failure' || cls.breaker === 'in_doubt') return 'error';
  return 'ok';
}

function positiveInt(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value >= 1 ? Math.floor(value) : fallback;
}

function nonNegative(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value >= 0 ? value : fallback;
}
