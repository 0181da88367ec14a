/**
 * The `--rate` cap of one partner client: every attempt of every call goes through it, so that the
 * cap acts on all workers together rather than on each on its own.
 */
import { sleep, type WaitResult } from '../_sleep.js';

/** A monotonic clock in milliseconds (wall-clock jumps must not stall or burst the limiter). */
export type Clock = () => number;
const monotonic: Clock = () => performance.now();

/**
 * At most `rate` attempts per second, evenly spaced: each attempt reserves the next free slot
 * `1000/rate` ms after the previous one. `rate` 0 means no cap.
 */
export class RateLimiter {
  readonly #intervalMs: number;
  readonly #now: Clock;
  #nextSlot = Number.NEGATIVE_INFINITY;

  constructor(rate: number, now: Clock = monotonic) {
    if (!Number.isFinite(rate) || rate < 0) throw new RangeError(`rate must be a non-negative number, got ${rate}`);
    this.#intervalMs = rate === 0 ? 0 : 1000 / rate;
    this.#now = now;
  }

  /** Reserves a slot and returns how long to wait for it (0 when it is free now). */
  reserve(): number {
    if (this.#intervalMs === 0) return 0;
    const now = this.#now();
    const slot = Math.max(now, this.#nextSlot);
    this.#nextSlot = slot + this.#intervalMs;
    return slot - now;
  }

  /** Waits for the next slot. An aborted wait gives its slot up (the cap stays a cap). */
  acquire(signals: readonly (AbortSignal | undefined)[] = []): Promise<WaitResult> {
    return sleep(this.reserve(), signals);
  }
}
