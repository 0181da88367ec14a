/**
 * How many requests may be in flight at once: the seam between the partner client and the policy
 * that decides it. Every attempt of every call (agent validation, quote, lead) takes a slot before
 * it leaves and gives it back with what its answer taught, so that one limiter sees the partner as
 * a whole. A slot is held only while a request is on the wire: a request waiting out a back-off or
 * a `Retry-After` holds none, so one throttled request never freezes the others.
 *
 * {@link FixedLimiter} is `--no-adaptive`; `AdaptiveLimiter` (`./index.ts`) moves the limit with
 * the partner's answers (docs/adaptive.md).
 */
import type { JobShare } from './share.js';
import { onAnyAbort, type WaitResult } from '../_sleep.js';

/** Time as a limiter sees it: a monotonic clock and one-shot timers (a simulation injects its own). */
export interface LimiterClock {
  now(): number;
  /** Runs `callback` after `delayMs`; returns a function that cancels it. */
  schedule(callback: () => void, delayMs: number): () => void;
}

export const systemClock: LimiterClock = {
  now: () => performance.now(),
  schedule: (callback, delayMs) => {
    const timer = setTimeout(callback, delayMs);
    return () => clearTimeout(timer);
  },
};

/** What one finished attempt tells the limiter. */
export interface AttemptSample {
  /** Milliseconds from the request leaving to its answer (or its failure). */
  latencyMs: number;
  /**
   * - `ok`: the partner answered and is keeping up (2xx, or a final 4xx about the data);
   * - `throttled`: 429: the partner refuses our rate;
   * - `error`: a 5xx or a transport failure (refused, reset, time-out);
   * - `dropped`: nothing was learned (the slot was given back unused).
   */
  signal: 'ok' | 'throttled' | 'error' | 'dropped';
  /**
   * False when the latency says nothing of the partner's queue for quotes and leads: an agent
   * validation is a light look-up, answered in a few ms where a quote takes hundreds. Its `ok` still
   * counts as an answer; its latency is not measured against the quotes' (default true).
   */
  timed?: boolean;
}

/**
 * A permission to have one request in flight. Call `sent()` when its request leaves (after any wait
 * for `--rate` and the ledger): requests in flight are those sent and not answered, not the slots
 * waiting to send. Release it exactly once.
 */
export interface ConcurrencySlot {
  sent(): void;
  release(sample: AttemptSample): void;
}

export interface ConcurrencyLimiter {
  /** Waits for a free slot (and, for a pacing limiter, its turn); `'aborted'` when a signal fired first. */
  acquire(signals?: readonly (AbortSignal | undefined)[]): Promise<ConcurrencySlot | 'aborted'>;
  /** Requests allowed in flight now (may be fractional for an adaptive limiter). */
  readonly limit: number;
  /** Requests sent and not yet answered (slots taken whose request has left). */
  readonly inFlight: number;
  /** Requests in flight since the last call: on average over that time, and the most at once; starts anew. */
  takeInFlight(): InFlightSample;
  /** Requests per second the limiter paces sends at; null when it does not pace. */
  readonly rate: number | null;
  /** A rate the partner announces (requests/s), or null; a limiter that paces keeps within it, a fixed one has none. */
  announceCeiling?(rate: number | null): void;
  /** This worker's share of its job's limit, when several work one job (`share.ts`); a fixed limiter has none. */
  share?(share: JobShare): void;
  /** The rate a pace learned from 429s, or null. */
  readonly learnedRate?: number | null;
  /** The partner's latency without a queue as the window measures it, ms, or null. */
  readonly baselineMs?: number | null;
}

/**
 * Requests sent and not yet answered, and the most of them at once since the last look: the count
 * both limiters keep (a slot taken but not sent does not count).
 */
export class InFlightCount {
  readonly #clock: () => number;
  #now = 0;
  #peak = 0;
  /** Requests in flight × milliseconds since {@link #since}, up to {@link #changedAt}. */
  #area = 0;
  #since: number;
  #changedAt: number;

  /** `clock`: a monotonic time in ms (the limiter's). */
  constructor(clock: () => number) {
    this.#clock = clock;
    this.#since = clock();
    this.#changedAt = this.#since;
  }

  get now(): number {
    return this.#now;
  }

  sent(): void {
    this.#advance(this.#clock());
    this.#now += 1;
    if (this.#now > this.#peak) this.#peak = this.#now;
  }

  answered(): void {
    this.#advance(this.#clock());
    this.#now -= 1;
  }

  /**
   * Since the last call: the mean in flight over that time (2 decimals; those in flight now when no
   * time passed) and the most at once (at least those in flight now). Starts anew.
   */
  take(): InFlightSample {
    const at = this.#clock();
    this.#advance(at);
    const span = at - this.#since;
    const sample = { mean: span > 0 ? Math.round((100 * this.#area) / span) / 100 : this.#now, peak: this.#peak };
    this.#area = 0;
    this.#since = at;
    this.#peak = this.#now;
    return sample;
  }

  #advance(at: number): void {
    this.#area += this.#now * (at - this.#changedAt);
    this.#changedAt = at;
  }
}

/** Requests in flight over a sample: on average over its time, and the most at once. */
export interface InFlightSample {
  mean: number;
  peak: number;
}

/**
 * A fixed number of slots, handed out in arrival order. Waiters that are aborted leave the queue
 * without taking a slot.
 */
export class FixedLimiter implements ConcurrencyLimiter {
  readonly #limit: number;
  /** Slots taken and not given back. */
  #taken = 0;
  readonly #inFlight: InFlightCount;
  readonly #waiters: (() => void)[] = [];

  /** `clock`: a monotonic time in ms, for the mean in flight of each sample (default `performance.now()`). */
  constructor(limit: number, clock: () => number = () => performance.now()) {
    this.#inFlight = new InFlightCount(clock);
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`);
    this.#limit = limit;
  }

  get limit(): number {
    return this.#limit;
  }

  get inFlight(): number {
    return this.#inFlight.now;
  }

  get rate(): null {
    return null;
  }

  takeInFlight(): InFlightSample {
    return this.#inFlight.take();
  }

  async acquire(signals: readonly (AbortSignal | undefined)[] = []): Promise<ConcurrencySlot | 'aborted'> {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    for (;;) {
      if (live.some((s) => s.aborted)) return 'aborted';
      if (this.#taken < this.#limit) {
        this.#taken += 1;
        return this.#slot();
      }
      if ((await this.#wait(live)) === 'aborted') return 'aborted';
    }
  }

  #slot(): ConcurrencySlot {
    let sent = false;
    let released = false;
    return {
      sent: () => {
        if (sent || released) return;
        sent = true;
        this.#inFlight.sent();
      },
      release: () => {
        if (released) return;
        released = true;
        this.#taken -= 1;
        if (sent) this.#inFlight.answered();
        this.#waiters.shift()?.();
      },
    };
  }

  #wait(signals: readonly AbortSignal[]): Promise<WaitResult> {
    return new Promise((resolve) => {
      const wake = (): void => {
        off();
        resolve('elapsed');
      };
      this.#waiters.push(wake);
      const off = onAnyAbort(signals, () => {
        const at = this.#waiters.indexOf(wake);
        if (at >= 0) this.#waiters.splice(at, 1);
        resolve('aborted');
      });
    });
  }
}
