/**
 * A circuit breaker per partner operation (agent validation; quote/lead): it stops a batch from
 * hammering a partner that is down, and gives up (halts the run) when the partner stays down.
 *
 *              openAfterFailures transient failures in a row,
 *              or openAfterInDoubt sends in a row in doubt,
 *              or openAfterFailures refusals (429) in a row over openAfterRefusingMs
 *   closed ───────────────────────────────────────────────────▶ open ──(probe, a read, answered)──▶ half_open
 *     ▲                                                          ▲ │                                   │ one trial call
 *     └──────────────────────── a success ◀──────────────────────┼─┘◀──────── the trial failed ◀──────┘
 *                                                                └── maxOutageMs without a success: gave up (halt)
 *
 * While it is open no call of its operation leaves; the client probes the partner with agent
 * validation (a read, never a quote) at growing intervals and tells the breaker how the probe went.
 * A probe that is answered lets one trial call of the operation through (half-open); its success
 * closes the breaker. A success of any call closes it, which ends the outage. It gives up when the
 * outage outlasts `maxOutageMs`, or when twice `openAfterInDoubt` sends have ended in doubt since the
 * outage began (a partner that takes quotes and never answers costs at most that many rows in doubt).
 *
 * A partner that answers but refuses everything (429: a key whose quota is spent) is the same kind of
 * outage, met by the same means: once it has refused `openAfterFailures` requests in a row and for at
 * least `openAfterRefusingMs` with nothing accepted (a rate cap refuses bursts but takes some requests
 * every second), the breaker opens, and its outage is counted from the first of those refusals. A
 * refused trial opens it again; a `Retry-After` puts the next probe off until then.
 *
 * Pure state plus waiting: no timers of its own except the give-up deadline, and a clock that tests
 * can inject.
 */
import { MAX_TIMER_MS, onAnyAbort } from './_sleep.js';
import type { Clock } from './limiter/index.js';

export type BreakerState = 'closed' | 'open' | 'half_open';

/** Options of {@link CircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Consecutive transient failures (5xx, time-outs, resets, in-doubt sends) that open it; 0 never. */
  openAfterFailures: number;
  /** Consecutive sends ending in doubt that open it (the run's concurrency); 0 never. */
  openAfterInDoubt: number;
  /** First pause between probes; doubles after each failed probe or trial, up to `maxCooldownMs`. */
  cooldownMs: number;
  maxCooldownMs: number;
  /** Give up (halt) when open this long without a success; 0 never. */
  maxOutageMs: number;
  /**
   * Refusals (429) in a row open it only once they have lasted this long with nothing accepted
   * (default {@link REFUSING_OPENS_AFTER_MS}).
   */
  openAfterRefusingMs?: number;
  now?: Clock;
}

/**
 * How long a partner must have refused every request before the breaker reads it as down: a rate
 * cap (per second, or a token bucket) accepts some requests every second, so a streak of 429s this
 * long means it takes nothing at all (a spent quota).
 */
export const REFUSING_OPENS_AFTER_MS = 5000;

/** What opened the breaker: transient failures, sends in doubt, or refusals (429). */
export type BreakerCause = 'failures' | 'in_doubt' | 'refusals';

/** Handed out by {@link CircuitBreaker.acquire}; report the attempt's result with it exactly once. */
export interface BreakerPermit {
  /** True for the single trial call let through while half-open. */
  readonly trial: boolean;
}

/** What opened the breaker, for the warning line. */
export interface BreakerOpening {
  reason: string;
  cause: BreakerCause;
  /** Monotonic time when the breaker will give up unless the partner recovers (Infinity: never). */
  giveUpAt: number;
}

export class CircuitBreaker {
  readonly #options: Required<CircuitBreakerOptions>;
  readonly #gaveUp = new AbortController();
  readonly #wakers = new Set<() => void>();
  #state: BreakerState = 'closed';
  #failures = 0;
  #inDoubt = 0;
  #cooldownMs: number;
  #nextProbeAt = 0;
  #outageStartedAt: number | null = null;
  #trialOut = false;
  #deadline: NodeJS.Timeout | undefined;
  #opening: BreakerOpening | null = null;
  /** Sends in doubt since the outage began (the streak that opened it, late ones, failed trials). */
  #outageInDoubt = 0;
  #gaveUpBecause: 'outage' | 'in_doubt' | 'refused' | null = null;
  /** Refusals (429) since the last success, and when the first of them came (monotonic ms). */
  #refusals = 0;
  #refusedSince: number | null = null;
  /** Successes so far: a caller tells by it whether anything was accepted while it waited. */
  #accepted = 0;
  /** No probe before this (monotonic ms): the last refusal's Retry-After. */
  #probeNotBefore = 0;
  /** Aborted when it opens: callers holding a permit of the closed breaker stop waiting for a slot. */
  #closedSpell = new AbortController();

  constructor(options: CircuitBreakerOptions) {
    this.#options = { now: () => performance.now(), openAfterRefusingMs: REFUSING_OPENS_AFTER_MS, ...options };
    this.#cooldownMs = options.cooldownMs;
  }

  get state(): BreakerState {
    return this.#state;
  }

  get consecutiveFailures(): number {
    return this.#failures;
  }

  /** True once it gave up: open for `maxOutageMs` without recovery. It never closes again. */
  get gaveUp(): boolean {
    return this.#gaveUp.signal.aborted;
  }

  /**
   * Why it gave up: the outage lasted `maxOutageMs` (`refused` when refusals opened it: the partner
   * refused every request that long), or 2 × `openAfterInDoubt` sends ended in doubt.
   */
  get gaveUpBecause(): 'outage' | 'in_doubt' | 'refused' | null {
    return this.#gaveUpBecause;
  }

  /**
   * Aborted as soon as the breaker opens (a new signal after it closes again): a call that took a
   * permit while it was closed and still waits for a slot gives it up instead of queueing in front
   * of the trial.
   */
  get closedSignal(): AbortSignal {
    return this.#closedSpell.signal;
  }

  /** How many calls have succeeded so far (a monotonic count). */
  get accepted(): number {
    return this.#accepted;
  }

  /** Monotonic time of the first refusal since the last success; null when the last answer was not refused. */
  get refusedSince(): number | null {
    return this.#refusedSince;
  }

  /** Aborted when it gives up, so that waits end at once. */
  get gaveUpSignal(): AbortSignal {
    return this.#gaveUp.signal;
  }

  /** Why and until when it is open (null when closed). */
  get opening(): BreakerOpening | null {
    return this.#opening;
  }

  /** Monotonic time of the next probe while open (the client's prober reads it). */
  get nextProbeAt(): number {
    return this.#nextProbeAt;
  }

  /** Milliseconds since the outage began (0 when closed). */
  outageMs(): number {
    return this.#outageStartedAt === null ? 0 : this.#options.now() - this.#outageStartedAt;
  }

  /**
   * Waits until a call may leave: at once when closed; as the single trial when half-open; not at
   * all while open (the prober moves it on).
   */
  async acquire(signals: readonly (AbortSignal | undefined)[] = []): Promise<BreakerPermit | 'aborted' | 'gave_up'> {
    for (;;) {
      if (this.gaveUp) return 'gave_up';
      if (signals.some((s) => s?.aborted === true)) return 'aborted';
      if (this.#state === 'closed') return { trial: false };
      if (this.#state === 'half_open' && !this.#trialOut) {
        this.#trialOut = true;
        return { trial: true };
      }
      await this.#waitForChange(signals);
    }
  }

  /** True when a permit taken earlier may still be used (the breaker did not open meanwhile). */
  allows(permit: BreakerPermit): boolean {
    return !this.gaveUp && (permit.trial || this.#state === 'closed');
  }

  /** The partner answered sensibly (2xx, a final 4xx, a readable validation): it is up. */
  recordSuccess(_permit?: BreakerPermit): { closedAfterMs: number } | null {
    this.#failures = 0;
    this.#inDoubt = 0;
    this.#refusals = 0;
    this.#refusedSince = null;
    this.#accepted += 1;
    this.#trialOut = false;
    if (this.#state === 'closed' || this.gaveUp) return null;
    const closedAfterMs = this.outageMs();
    this.#close();
    return { closedAfterMs };
  }

  /**
   * A transient failure (`inDoubt`: a send that may have been applied). Returns the opening when
   * this failure opened the breaker, so that the caller can warn once.
   */
  recordFailure(permit: BreakerPermit, options: { inDoubt?: boolean; detail?: string } = {}): BreakerOpening | null {
    if (this.gaveUp) return null;
    const { openAfterFailures, openAfterInDoubt } = this.#options;
    if (this.#state !== 'closed' && options.inDoubt === true) {
      // A partner that takes requests and never answers may cost at most twice the streak that
      // opened the breaker in rows in doubt: past that, give up rather than risk more.
      this.#outageInDoubt += 1;
      if (openAfterInDoubt > 0 && this.#outageInDoubt >= 2 * openAfterInDoubt) {
        this.#giveUp('in_doubt');
        return null;
      }
    }
    if (permit.trial) {
      this.#trialOut = false;
      this.#reopen();
      return null;
    }
    // A request that left before the breaker opened says nothing new about the partner.
    if (this.#state !== 'closed') return null;
    this.#failures += 1;
    this.#inDoubt = options.inDoubt === true ? this.#inDoubt + 1 : 0;
    const detail = options.detail === undefined ? '' : ` (last: ${options.detail})`;
    if (openAfterInDoubt > 0 && this.#inDoubt >= openAfterInDoubt) {
      return this.#open(`${this.#inDoubt} requests in a row got no answer after they were sent${detail}`, 'in_doubt');
    }
    if (openAfterFailures > 0 && this.#failures >= openAfterFailures) {
      return this.#open(`${this.#failures} consecutive transient failures${detail}`, 'failures');
    }
    return null;
  }

  /**
   * The partner refused a call (429): it is up, but took nothing. Returns the opening when refusals
   * have lasted long enough to open the breaker (see the class comment). `retryAfterMs`: the wait the
   * partner asked for, before which no probe is made.
   */
  recordRefusal(permit: BreakerPermit, options: { retryAfterMs?: number | undefined; detail?: string } = {}): BreakerOpening | null {
    if (this.gaveUp) return null;
    const now = this.#options.now();
    this.#refusals += 1;
    this.#refusedSince ??= now;
    if (options.retryAfterMs !== undefined) this.#probeNotBefore = Math.max(this.#probeNotBefore, now + options.retryAfterMs);
    if (permit.trial) {
      this.#trialOut = false;
      this.#reopen();
      return null;
    }
    if (this.#state !== 'closed') return null;
    const { openAfterFailures, openAfterRefusingMs } = this.#options;
    const refusingMs = now - this.#refusedSince;
    if (openAfterFailures > 0 && this.#refusals >= openAfterFailures && refusingMs >= openAfterRefusingMs) {
      const detail = options.detail === undefined ? '' : ` (last: ${options.detail})`;
      return this.#open(`${this.#refusals} requests in a row refused with 429 over ${Math.round(refusingMs / 1000)} s, none accepted${detail}`, 'refusals', this.#refusedSince);
    }
    return null;
  }

  /** Gives a permit back unused, or after an answer that says nothing (a 429): lets another trial in. */
  release(permit: BreakerPermit): void {
    if (permit.trial && this.#trialOut) {
      this.#trialOut = false;
      this.#wake();
    }
  }

  /** The prober's read was answered: let one trial call through (or close, when `closes`). */
  probeSucceeded(options: { closes: boolean }): { closedAfterMs: number } | null {
    if (this.#state !== 'open' || this.gaveUp) return null;
    if (options.closes) return this.recordSuccess();
    this.#state = 'half_open';
    this.#trialOut = false;
    this.#wake();
    return null;
  }

  /** The prober's read failed: stay open, wait longer before the next probe. */
  probeFailed(): void {
    if (this.#state === 'open' && !this.gaveUp) this.#scheduleProbe(true);
  }

  /** Stops the give-up timer (the client is closing). */
  dispose(): void {
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    this.#deadline = undefined;
  }

  /** Opens it; `since`: when the outage began, if before now (the first of the refusals that open it). */
  #open(reason: string, cause: BreakerCause, since?: number): BreakerOpening {
    const now = this.#options.now();
    this.#state = 'open';
    this.#closedSpell.abort();
    this.#cooldownMs = this.#options.cooldownMs;
    this.#scheduleProbe(false);
    if (this.#outageStartedAt === null) {
      this.#outageStartedAt = since ?? now;
      this.#outageInDoubt = this.#inDoubt;
      const max = this.#options.maxOutageMs;
      // Kept referenced: while callers wait for the partner, this timer keeps the process alive.
      // Beyond what a timer can hold (about 24.8 days) the wait is unbounded.
      const because = cause === 'refusals' ? 'refused' : 'outage';
      if (max > 0 && max <= MAX_TIMER_MS) this.#deadline = setTimeout(() => this.#giveUp(because), Math.max(0, this.#outageStartedAt + max - now));
    }
    const max = this.#options.maxOutageMs;
    this.#opening = { reason, cause, giveUpAt: max > 0 && max <= MAX_TIMER_MS ? (this.#outageStartedAt ?? now) + max : Number.POSITIVE_INFINITY };
    this.#wake();
    return this.#opening;
  }

  /** A failed trial: back to open, the outage clock still running. */
  #reopen(): void {
    if (this.#state === 'closed') return;
    this.#state = 'open';
    this.#scheduleProbe(true);
    this.#wake();
  }

  #scheduleProbe(longer: boolean): void {
    if (longer) this.#cooldownMs = Math.min(this.#cooldownMs * 2, this.#options.maxCooldownMs);
    this.#nextProbeAt = Math.max(this.#options.now() + this.#cooldownMs, this.#probeNotBefore);
  }

  #close(): void {
    this.#state = 'closed';
    if (this.#closedSpell.signal.aborted) this.#closedSpell = new AbortController();
    this.#outageStartedAt = null;
    this.#outageInDoubt = 0;
    this.#opening = null;
    this.#cooldownMs = this.#options.cooldownMs;
    this.#probeNotBefore = 0;
    this.dispose();
    this.#wake();
  }

  #giveUp(because: 'outage' | 'in_doubt' | 'refused'): void {
    this.dispose();
    if (this.#state === 'closed' || this.gaveUp) return;
    this.#state = 'open';
    this.#gaveUpBecause = because;
    this.#gaveUp.abort();
    this.#wake();
  }

  #wake(): void {
    const wakers = [...this.#wakers];
    this.#wakers.clear();
    for (const wake of wakers) wake();
  }

  #waitForChange(signals: readonly (AbortSignal | undefined)[]): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.#wakers.delete(done);
        off();
        resolve();
      };
      this.#wakers.add(done);
      const off = onAnyAbort([...signals, this.#gaveUp.signal], done);
    });
  }
}
