/**
 * `--adaptive` (the default, docs/adaptive.md): requests in flight move between 1 and `--concurrency`
 * with the partner's answers. The rules are the pure functions of `_window-rules.ts`; this class
 * measures around them (send and accept rates, in-flight counts), queues the callers and enforces
 * the window and, once the partner has throttled, the pacing rate. docs/adaptive.md describes it.
 */
import { InFlightCount, type AttemptSample, type ConcurrencyLimiter, type ConcurrencySlot, type InFlightSample } from './concurrency.js';
import { onAnyAbort } from './_sleep.js';
import { createWindowState, effectiveWindow, nextWindowState, WINDOW_RULES, type WindowEvent, type WindowState } from './_window-rules.js';

/** Time as the limiter sees it: a monotonic clock and one-shot timers (a simulation injects its own). */
export interface LimiterClock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Runs `callback` after `delayMs`; returns a function that cancels it. */
  schedule(callback: () => void, delayMs: number): () => void;
}

/** The window a cold start begins with. */
export const DEFAULT_INITIAL_WINDOW: number = WINDOW_RULES.initialWindow;

/** Options of {@link AdaptiveLimiter}. */
export interface AdaptiveLimiterOptions {
  /** The largest window: `--concurrency`. */
  ceiling: number;
  /** The window at the start (default 4, at most the ceiling). */
  initialWindow?: number;
  /**
   * True when `initialWindow` is a limit the partner set (where an earlier run against it settled):
   * start there without the slow start's growth (which would overshoot a limit already found),
   * growing by one per round trip.
   */
  warm?: boolean;
  /**
   * The rate (requests/s) an earlier run against the partner was paced at when it settled: a rate
   * cap found then. The limiter starts paced just below it instead of finding the cap again by
   * overshooting it (see `createWindowState`).
   */
  pace?: number;
  /** Default: `performance.now()` and `setTimeout`. */
  clock?: LimiterClock;
}

/** What the limiter is doing, for a run's timeline (`run_samples`) and for tests. */
export interface AdaptiveLimiterSnapshot {
  /** Requests allowed in flight now (as {@link AdaptiveLimiter.limit}). */
  limit: number;
  inFlight: number;
  /** Pacing rate in requests/s, or null when not pacing. */
  rate: number | null;
  /** Lowest recent round latency (the partner without a queue), ms; null before the first round. */
  baselineLatencyMs: number | null;
  /** Smoothed latency of `ok` answers, ms; null before the first. */
  smoothedLatencyMs: number | null;
  /** Callers waiting for a slot. */
  waiting: number;
}

const systemClock: LimiterClock = {
  now: () => performance.now(),
  schedule: (callback, delayMs) => {
    const timer = setTimeout(callback, delayMs);
    return () => clearTimeout(timer);
  },
};

/** How long pacing counts as holding requests back after it last did. */
const PACE_LIMITED_MS = 1000;
/** The accepted rate is counted over this span. */
const ACCEPTED_SPAN_MS = 2000;
/** Answers over which the share of 429s is counted. */
const RECENT_ANSWERS = 50;

interface Waiter {
  settle(result: ConcurrencySlot | 'aborted'): void;
}

/**
 * An adaptive {@link ConcurrencyLimiter}: one per partner client, shared by validation, quote and
 * lead calls. Callers are served in arrival order; an aborted caller leaves the queue.
 */
export class AdaptiveLimiter implements ConcurrencyLimiter {
  readonly #clock: LimiterClock;
  #state: WindowState;
  /** Slots taken and not given back: what the window admits against. */
  #taken = 0;
  /** Of those, requests sent and not answered. */
  readonly #inFlight: InFlightCount;
  readonly #waiters: Waiter[] = [];
  /** When pacing lets the next request leave. */
  #nextSendAt = Number.NEGATIVE_INFINITY;
  #lastPaceHoldAt = Number.NEGATIVE_INFINITY;
  #cancelTimer: (() => void) | undefined;
  /** Requests sent, and of those the partner accepted (counted at the time they were sent). */
  readonly #sent = new EventMeter();
  readonly #accepted = new EventMeter();
  /** The last answers, 1 for a 429: their share tells a rate cap's overshoot from a stray 429. */
  readonly #outcomes = new Uint8Array(RECENT_ANSWERS);
  #outcomeCount = 0;
  #throttledRecently = 0;

  constructor(options: AdaptiveLimiterOptions) {
    this.#clock = options.clock ?? systemClock;
    this.#inFlight = new InFlightCount(() => this.#clock.now());
    const now = this.#clock.now();
    const state = createWindowState(options.ceiling, now, options.initialWindow, options.pace);
    this.#state = options.warm === true ? { ...state, slowStart: false } : state;
  }

  /**
   * Requests allowed in flight now: the window (fractional; whole requests below it are admitted),
   * or, while sends are paced, the requests the pace allows at the current latency (rate × latency),
   * when that is lower — what the partner really lets through, for the timeline and the report.
   */
  get limit(): number {
    const window = effectiveWindow(this.#state);
    const { rate, smoothedLatencyMs } = this.#state;
    if (rate === undefined || smoothedLatencyMs === undefined) return window;
    return Math.max(1, Math.min(window, (rate * smoothedLatencyMs) / 1000));
  }

  get inFlight(): number {
    return this.#inFlight.now;
  }

  /** Pacing rate in requests/s, or null when not pacing. */
  get rate(): number | null {
    return this.#state.rate ?? null;
  }

  takeInFlight(): InFlightSample {
    return this.#inFlight.take();
  }

  snapshot(): AdaptiveLimiterSnapshot {
    const s = this.#state;
    return {
      limit: this.limit,
      inFlight: this.#inFlight.now,
      rate: s.rate ?? null,
      baselineLatencyMs: s.baselineMs ?? null,
      smoothedLatencyMs: s.smoothedLatencyMs ?? null,
      waiting: this.#waiters.length,
    };
  }

  async acquire(signals: readonly (AbortSignal | undefined)[] = []): Promise<ConcurrencySlot | 'aborted'> {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    if (live.some((s) => s.aborted)) return 'aborted';
    if (this.#waiters.length === 0 && this.#admits() && this.#paceDelay() === 0) return this.#take();
    return new Promise<ConcurrencySlot | 'aborted'>((resolve) => {
      let off = (): void => {};
      const waiter: Waiter = {
        settle: (result) => {
          off();
          resolve(result);
        },
      };
      this.#waiters.push(waiter);
      // One listener per signal however many callers wait on it (see onAnyAbort).
      off = onAnyAbort(live, () => {
        const at = this.#waiters.indexOf(waiter);
        if (at >= 0) this.#waiters.splice(at, 1);
        waiter.settle('aborted');
        // The head may have left: the next one may go now (or need no timer at all).
        this.#dispatch();
      });
      this.#dispatch();
    });
  }

  #admits(): boolean {
    return this.#taken < Math.floor(effectiveWindow(this.#state));
  }

  #paceDelay(): number {
    return this.#state.rate === undefined ? 0 : Math.max(0, this.#nextSendAt - this.#clock.now());
  }

  /** Hands out slots to waiters in order while the window and the pace allow; arms a timer for the pace. */
  #dispatch(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    while (this.#waiters.length > 0 && this.#admits()) {
      const delay = this.#paceDelay();
      if (delay > 0) {
        this.#lastPaceHoldAt = this.#clock.now();
        this.#cancelTimer = this.#clock.schedule(() => {
          this.#cancelTimer = undefined;
          this.#dispatch();
        }, delay);
        return;
      }
      (this.#waiters.shift() as Waiter).settle(this.#take());
    }
  }

  #take(): ConcurrencySlot {
    const now = this.#clock.now();
    this.#taken += 1;
    const rate = this.#state.rate;
    if (rate !== undefined) {
      // On schedule rather than from now: timers fire late on a busy event loop, and restarting
      // the interval from each late firing would pace below the rate. Half an interval of
      // lateness is made up; an idle pacer banks no burst.
      const interval = 1000 / rate;
      this.#nextSendAt = (this.#nextSendAt >= now - interval / 2 ? this.#nextSendAt : now) + interval;
    }
    // Until its request leaves (the caller may still wait for --rate or the ledger), the slot counts
    // as taken, not in flight: the window grows only with requests really out.
    let sentAt = now;
    let inFlightAtSend = this.#taken;
    let sent = false;
    let released = false;
    return {
      sent: () => {
        if (sent || released) return;
        sent = true;
        sentAt = this.#clock.now();
        this.#sent.add(sentAt);
        this.#inFlight.sent();
        inFlightAtSend = this.#inFlight.now;
      },
      release: (sample: AttemptSample) => {
        if (released) return;
        released = true;
        this.#taken -= 1;
        if (sent) this.#inFlight.answered();
        this.#learn(sample, sentAt, inFlightAtSend);
        this.#dispatch();
      },
    };
  }

  #learn(sample: AttemptSample, sentAt: number, inFlightAtSend: number): void {
    const now = this.#clock.now();
    let event: WindowEvent;
    switch (sample.signal) {
      case 'dropped':
        return;
      case 'ok':
        this.#accepted.add(sentAt);
        this.#recordOutcome(0);
        // A validation's few milliseconds would be the latency baseline, and every quote's hundreds
        // queueing: the window cut round after round (6× slower against a partner with no limit).
        if (sample.timed === false) return;
        event = { type: 'ok', latencyMs: sample.latencyMs, sentAt, inFlightAtSend, paceLimited: now - this.#lastPaceHoldAt < PACE_LIMITED_MS };
        break;
      case 'throttled': {
        this.#recordOutcome(1);
        // Over a fixed count, as if the run began with successes: a share needs that much evidence.
        const throttledShare = this.#throttledRecently / RECENT_ANSWERS;
        // Counted by the time they were sent, as a rate cap counts them, up to when most of their
        // answers are in; over two seconds, so that a cap counting per calendar second, reached
        // in bursts, does not show twice its rate in a window across two of its seconds.
        const answersIn = now - Math.min(2000, 1.5 * (this.#state.smoothedLatencyMs ?? 0));
        const acceptedRate = this.#accepted.perSecond(answersIn, ACCEPTED_SPAN_MS);
        // What the partner took over two whole seconds: across the run's first seconds the rate
        // above may count a cap's second and most of the next as one (a cap of 40/s read as 57).
        const sustainedRate = this.#accepted.perSecond(answersIn, ACCEPTED_SPAN_MS, ACCEPTED_SPAN_MS);
        event = { type: 'throttled', sentAt, sendRate: this.#sent.perSecond(now, 1000), acceptedRate, sustainedRate, throttledShare };
        break;
      }
      case 'error':
        event = { type: 'error', sentAt };
        break;
    }
    this.#state = nextWindowState(this.#state, event, now);
  }

  #recordOutcome(throttled: 0 | 1): void {
    const at = this.#outcomeCount % RECENT_ANSWERS;
    this.#throttledRecently += throttled - (this.#outcomes[at] as number);
    this.#outcomes[at] = throttled;
    this.#outcomeCount += 1;
  }
}

/**
 * Counts of events by time, in 100-ms buckets over the last few seconds (constant memory): events
 * may be counted at a past time (an answer, at the time its request left).
 */
class EventMeter {
  static readonly #BUCKET_MS = 100;
  static readonly #BUCKETS = 64;
  readonly #counts = new Array<number>(EventMeter.#BUCKETS).fill(0);
  /** The bucket number each slot holds now; a slot holding an older one is empty. */
  readonly #keys = new Array<number>(EventMeter.#BUCKETS).fill(Number.NEGATIVE_INFINITY);
  #firstKey = Number.POSITIVE_INFINITY;

  add(at: number): void {
    const key = Math.floor(at / EventMeter.#BUCKET_MS);
    const slot = EventMeter.#slot(key);
    this.#firstKey = Math.min(this.#firstKey, key);
    if (this.#keys[slot] === key) this.#counts[slot] = (this.#counts[slot] as number) + 1;
    else if ((this.#keys[slot] as number) < key) {
      this.#keys[slot] = key;
      this.#counts[slot] = 1;
    }
  }

  /**
   * Events per second over the `spanMs` (a multiple of 100) ending at `to`, or since the first event
   * if later — but over `minSpanMs` at least (default a second): rate caps count per second, so the
   * 40 requests a cap of 40/s admits in the first half-second of a run are 40/s, not 80/s (which the
   * pace would return to).
   */
  perSecond(to: number, spanMs: number, minSpanMs = 1000): number {
    const last = Math.floor(to / EventMeter.#BUCKET_MS);
    const first = Math.max(last - spanMs / EventMeter.#BUCKET_MS + 1, this.#firstKey);
    if (first > last) return 0;
    let total = 0;
    for (let key = first; key <= last; key += 1) {
      const slot = EventMeter.#slot(key);
      if (this.#keys[slot] === key) total += this.#counts[slot] as number;
    }
    return (total * 1000) / Math.max(minSpanMs, (last - first + 1) * EventMeter.#BUCKET_MS);
  }

  static #slot(key: number): number {
    return ((key % EventMeter.#BUCKETS) + EventMeter.#BUCKETS) % EventMeter.#BUCKETS;
  }
}
