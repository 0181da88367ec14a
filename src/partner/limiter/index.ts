/**
 * The partner's limit as the client sees it (docs/adaptive.md): `--adaptive` composes a concurrency
 * window (`window.ts`) and a pace learned from 429s (`pace.ts`); `--no-adaptive` is a fixed number of
 * slots; `--rate` a hard cap on top of either. This file queues the callers, measures around the
 * two controllers (rates, in flight, the share of 429s) and enforces what they decide.
 */
import { Measures } from './_meter.js';
import { SlotQueue } from './_queue.js';
import { InFlightCount, systemClock, type AttemptSample, type ConcurrencyLimiter, type ConcurrencySlot, type InFlightSample, type LimiterClock } from './_slots.js';
import { createPace, PACE, paceAfter, paceMemory, paceRate, type PaceMemory, type PaceState } from './pace.js';
import type { JobShare } from './share.js';
import { createWindow, effectiveWindow, WINDOW, windowAfter, type WindowState } from './window.js';

export { FixedLimiter, InFlightCount, type AttemptSample, type ConcurrencyLimiter, type ConcurrencySlot, type InFlightSample, type LimiterClock } from './_slots.js';
export { RateLimiter, type Clock } from './rate-cap.js';
export type { PaceMemory } from './pace.js';
export { jobShare, joiningShare, LIVE_MS, type JobShare, type WorkerLimit } from './share.js';

/** The window a cold start begins with. */
export const DEFAULT_INITIAL_WINDOW: number = WINDOW.initial;

/**
 * `ceiling`: `--concurrency`. `initialWindow` (default 4) is `warm` when the partner set it (an
 * earlier run settled there: no slow start). `pace`: the rate an earlier run settled at, paced there
 * from the start; `paceMemory`: what another process's pace learned (precedes `pace`).
 */
export interface AdaptiveLimiterOptions {
  ceiling: number;
  initialWindow?: number;
  warm?: boolean;
  pace?: number;
  paceMemory?: Partial<PaceMemory>;
  clock?: LimiterClock;
}

/** What the limiter is doing, for tests and the timeline. */
export interface AdaptiveLimiterSnapshot {
  limit: number;
  inFlight: number;
  rate: number | null;
  baselineLatencyMs: number | null;
  smoothedLatencyMs: number | null;
  waiting: number;
}

/** The pace counts as holding requests back for this long after it last did. */
const PACE_HELD_MS = 1000;

export class AdaptiveLimiter implements ConcurrencyLimiter {
  readonly #clock: LimiterClock;
  #window: WindowState;
  #pace: PaceState;
  readonly #inFlight: InFlightCount;
  readonly #queue: SlotQueue;
  readonly #measures = new Measures(PACE.recentAnswers, PACE.burstAnswers);
  #nextSendAt = Number.NEGATIVE_INFINITY;
  /** The rate the partner announces (the job's workers live, the window's `flows`, share it). */
  #announced: number | null = null;

  constructor(options: AdaptiveLimiterOptions) {
    this.#clock = options.clock ?? systemClock;
    const now = this.#clock.now();
    const memory = options.paceMemory ?? (options.pace === undefined ? undefined : { rate: options.pace });
    // A remembered pace keeps its room above the requests it puts in flight: the pace, not the window, holds a rate.
    const initial = (options.initialWindow ?? WINDOW.initial) * (memory?.rate == null ? 1 : 2);
    this.#window = createWindow(options.ceiling, now, Math.min(options.ceiling, initial), options.warm === true || memory?.rate != null);
    this.#pace = createPace(now, memory);
    this.#inFlight = new InFlightCount(() => this.#clock.now());
    this.#queue = new SlotQueue(this.#clock, this.#inFlight, {
      admits: (taken) => taken < Math.floor(effectiveWindow(this.#window)),
      delayMs: (at) => Math.max(0, this.rate === null ? 0 : this.#nextSendAt - at, this.#pace.pausedUntil - at),
      taken: (at) => {
        const rate = this.rate;
        // On schedule, not from now: a timer firing late on a busy event loop must not slow the pace.
        if (rate !== null) this.#nextSendAt = (this.#nextSendAt >= at - 500 / rate ? this.#nextSendAt : at) + 1000 / rate;
      },
      sent: (at) => this.#measures.sent(at),
      released: (sample, sentAt, inFlightAtSend) => this.#learn(sample, sentAt, inFlightAtSend),
    });
  }

  /** The window, or while paced, what the pace lets through at the current latency when that is lower. */
  get limit(): number {
    const rate = this.rate;
    const latency = this.#window.trendMs;
    const window = effectiveWindow(this.#window);
    if (rate === null || latency === undefined) return window;
    return Math.max(1, Math.min(window, (rate * latency) / 1000));
  }

  get inFlight(): number {
    return this.#inFlight.now;
  }

  get rate(): number | null {
    return paceRate(this.#pace);
  }

  /** What the pace has learned, to share with another process or start the next run from. */
  paceMemory(): PaceMemory {
    return paceMemory(this.#pace);
  }

  /** A rate the partner announces (requests/s), or null: sends stay within it (within this worker's share of it). */
  announceCeiling(rate: number | null): void {
    this.#announced = rate !== null && rate > 0 && Number.isFinite(rate) ? rate : null;
    this.#pace = { ...this.#pace, ceiling: this.#announced === null ? null : this.#announced / this.#window.flows };
    this.#queue.dispatch();
  }

  /** The partner's latency without a queue as the window measures it, ms; null before it has. */
  get baselineMs(): number | null {
    return this.#window.baselineMs ?? null;
  }

  /** The rate the pace learned from 429s (not the announced ceiling), or null. */
  get learnedRate(): number | null {
    return this.#pace.rate;
  }

  /**
   * This worker's share of the job's limit (`share.ts`): an announced rate is divided among the
   * workers, a learned pace becomes the even share (its cubic scaled with it), and the window measures
   * its queue from the job's baseline, growing by its share of one client's growth.
   */
  share(share: JobShare): void {
    this.#window = { ...this.#window, flows: Math.max(1, share.workers) };
    const own = this.#pace.rate;
    if (share.pace !== null && own !== null && share.pace > 0) {
      this.#pace = { ...this.#pace, rate: share.pace, lastMaxRate: (this.#pace.lastMaxRate * share.pace) / own };
    }
    // The job's baseline (the lowest any worker measured) when this worker's is higher.
    const base = this.#window.baselineMs;
    if (share.baselineMs !== null && base !== undefined && share.baselineMs < base) this.#window = { ...this.#window, baselineMs: share.baselineMs };
    this.announceCeiling(this.#announced);
  }

  /** No request leaves before `until` (this clock's ms). */
  pauseUntil(until: number): void {
    this.#pace = { ...this.#pace, pausedUntil: Math.max(this.#pace.pausedUntil, until) };
    this.#queue.dispatch();
  }

  takeInFlight(): InFlightSample {
    return this.#inFlight.take();
  }

  snapshot(): AdaptiveLimiterSnapshot {
    const { baselineMs, trendMs } = this.#window;
    return { limit: this.limit, inFlight: this.inFlight, rate: this.rate, waiting: this.#queue.waiting, baselineLatencyMs: baselineMs ?? null, smoothedLatencyMs: trendMs ?? null };
  }

  acquire(signals: readonly (AbortSignal | undefined)[] = []): Promise<ConcurrencySlot | 'aborted'> {
    return this.#queue.acquire(signals);
  }

  #learn(sample: AttemptSample, sentAt: number, inFlightAtSend: number): void {
    if (sample.signal === 'dropped') return;
    const now = this.#clock.now();
    // An agent validation's few milliseconds say nothing of a quote's queue: the window does not see it.
    if (sample.signal !== 'throttled' && sample.timed !== false) {
      this.#window = windowAfter(this.#window, { signal: sample.signal, latencyMs: sample.latencyMs, sentAt, inFlightAtSend }, now);
    }
    const latency = this.#window.trendMs ?? sample.latencyMs;
    this.#pace = paceAfter(this.#pace, {
      ...this.#measures.answered(sample.signal, sentAt, now, latency),
      throttled: sample.signal === 'throttled', sentAt,
      paceLimited: now - this.#queue.heldAt < PACE_HELD_MS,
      maxUsefulRate: latency > 0 ? (2 * this.#window.ceiling * 1000) / latency : Number.POSITIVE_INFINITY,
    }, now);
  }
}
