/**
 * The client's circuit breaker, shared by all calls: it stops a batch from hammering a partner
 * that is down, and halts the run when the partner stays down.
 *
 * closed ──(openAfter consecutive transient failures)──▶ open ──(cool-down)──▶ half_open
 *   ▲                                                     ▲                       │ one probe
 *   └──────────────────── a success ◀─────────────────────┴── the probe failed ◀──┘ (cool-down ×2)
 *
 * Consecutive transient failures (5xx, transport) that reach `maxConsecutiveFailures` halt the
 * breaker for good. While it is open only probes are sent, so the count grows by one per cool-down
 * (1 s, 2 s, 4 s … 30 s): a one-minute outage costs about ten, well under the default 50. Failures
 * of requests that left before the breaker opened are not counted again.
 */
import type { Clock } from './rate-limiter.js';

export type BreakerState = 'closed' | 'open' | 'half_open';

/** Options of {@link CircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Consecutive transient failures that open the breaker; 0 never opens it. */
  openAfter: number;
  /** First cool-down; doubles after each failed probe. */
  cooldownMs: number;
  /** Largest cool-down. */
  maxCooldownMs: number;
  /** Consecutive transient failures that halt the breaker for good; 0 never halts. */
  maxConsecutiveFailures: number;
  now?: Clock;
}

/** Handed out by {@link CircuitBreaker.acquire}; report the attempt's result with it exactly once. */
export interface BreakerPermit {
  /** True for the single attempt let through while half-open. */
  readonly probe: boolean;
}

export class CircuitBreaker {
  readonly #options: Required<CircuitBreakerOptions>;
  readonly #halt = new AbortController();
  readonly #wakers = new Set<() => void>();
  #state: BreakerState = 'closed';
  #consecutiveFailures = 0;
  #cooldownMs: number;
  #openUntil = 0;
  #probeOut = false;

  constructor(options: CircuitBreakerOptions) {
    this.#options = { now: () => performance.now(), ...options };
    this.#cooldownMs = options.cooldownMs;
  }

  get state(): BreakerState {
    return this.#state;
  }

  /** True once consecutive failures reached `maxConsecutiveFailures`; it never closes again. */
  get halted(): boolean {
    return this.#halt.signal.aborted;
  }

  /** Aborted when the breaker halts: waits listen to it so they end at once. */
  get haltSignal(): AbortSignal {
    return this.#halt.signal;
  }

  get consecutiveFailures(): number {
    return this.#consecutiveFailures;
  }

  /** Waits until an attempt may be sent: at once when closed; after the cool-down as the probe. */
  async acquire(signals: readonly (AbortSignal | undefined)[] = []): Promise<BreakerPermit | 'aborted' | 'halted'> {
    // Each round either returns or waits for a state change, a time-out or an abort.
    for (;;) {
      if (this.halted) return 'halted';
      if (signals.some((s) => s?.aborted === true)) return 'aborted';
      if (this.#state === 'closed') return { probe: false };
      if (this.#state === 'open') {
        const remaining = this.#openUntil - this.#options.now();
        if (remaining <= 0) {
          this.#state = 'half_open';
          this.#probeOut = true;
          return { probe: true };
        }
        await this.#waitForChange(remaining, signals);
      } else if (!this.#probeOut) {
        this.#probeOut = true;
        return { probe: true };
      } else {
        await this.#waitForChange(Number.POSITIVE_INFINITY, signals);
      }
    }
  }

  /** The partner answered (2xx or a final 4xx): it is up. */
  recordSuccess(_permit: BreakerPermit): void {
    this.#consecutiveFailures = 0;
    this.#cooldownMs = this.#options.cooldownMs;
    this.#probeOut = false;
    if (this.#state !== 'closed') {
      this.#state = 'closed';
      this.#wake();
    }
  }

  /** A transient failure: 5xx, or a transport failure (refused, reset, time-out). */
  recordFailure(permit: BreakerPermit): void {
    if (this.halted) return;
    if (permit.probe) {
      this.#probeOut = false;
      this.#consecutiveFailures += 1;
      if (this.#haltIfExhausted()) return;
      this.#cooldownMs = Math.min(this.#cooldownMs * 2, this.#options.maxCooldownMs);
      this.#open();
      return;
    }
    // A request that left before the breaker opened says nothing new about the partner.
    if (this.#state !== 'closed') return;
    this.#consecutiveFailures += 1;
    if (this.#haltIfExhausted()) return;
    if (this.#options.openAfter > 0 && this.#consecutiveFailures >= this.#options.openAfter) {
      this.#cooldownMs = this.#options.cooldownMs;
      this.#open();
    }
  }

  /** Neither (a 429, or a permit given back unused): lets the next waiter probe. */
  release(permit: BreakerPermit): void {
    if (permit.probe && this.#state === 'half_open') {
      this.#probeOut = false;
      this.#wake();
    }
  }

  #open(): void {
    this.#state = 'open';
    this.#openUntil = this.#options.now() + this.#cooldownMs;
    this.#wake();
  }

  #haltIfExhausted(): boolean {
    const max = this.#options.maxConsecutiveFailures;
    if (max <= 0 || this.#consecutiveFailures < max) return false;
    this.#state = 'open';
    this.#halt.abort();
    this.#wake();
    return true;
  }

  #wake(): void {
    const wakers = [...this.#wakers];
    this.#wakers.clear();
    for (const wake of wakers) wake();
  }

  #waitForChange(ms: number, signals: readonly (AbortSignal | undefined)[]): Promise<void> {
    const live = [...signals.filter((s): s is AbortSignal => s !== undefined), this.#halt.signal];
    return new Promise((resolve) => {
      const done = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        this.#wakers.delete(done);
        for (const s of live) s.removeEventListener('abort', done);
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      this.#wakers.add(done);
      for (const s of live) s.addEventListener('abort', done, { once: true });
    });
  }
}
