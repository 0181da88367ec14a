/**
 * The callers waiting for a slot of the adaptive limiter, served in arrival order while its policy
 * admits them (`admits`, `delayMs`); an aborted caller leaves the queue. The policy learns from
 * each slot given back (`released`).
 */
import { onAnyAbort } from '../_sleep.js';
import type { AttemptSample, ConcurrencySlot, InFlightCount, LimiterClock } from './_slots.js';

export interface QueuePolicy {
  /** Whether one more slot fits with `taken` slots out. */
  admits(taken: number): boolean;
  /** How long the next slot must wait (the pace, a pause); 0 to go now. */
  delayMs(now: number): number;
  /** A slot was handed out at `now`. */
  taken(now: number): void;
  /** A request left at `sentAt` (with `inFlightAtSend` out, it included). */
  sent(sentAt: number): void;
  /** A slot came back with what its attempt taught. */
  released(sample: AttemptSample, sentAt: number, inFlightAtSend: number): void;
}

export class SlotQueue {
  readonly #clock: LimiterClock;
  readonly #inFlight: InFlightCount;
  readonly #policy: QueuePolicy;
  readonly #waiters: ((slot: ConcurrencySlot | 'aborted') => void)[] = [];
  #taken = 0;
  #cancelTimer: (() => void) | undefined;
  /** When a waiter was last held back by `delayMs`. */
  heldAt = Number.NEGATIVE_INFINITY;

  constructor(clock: LimiterClock, inFlight: InFlightCount, policy: QueuePolicy) {
    this.#clock = clock;
    this.#inFlight = inFlight;
    this.#policy = policy;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  async acquire(signals: readonly (AbortSignal | undefined)[]): Promise<ConcurrencySlot | 'aborted'> {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    if (live.some((s) => s.aborted)) return 'aborted';
    if (this.#waiters.length === 0 && this.#policy.admits(this.#taken) && this.#policy.delayMs(this.#clock.now()) === 0) return this.#take();
    return new Promise((resolve) => {
      const waiter = (slot: ConcurrencySlot | 'aborted'): void => {
        off();
        resolve(slot);
      };
      this.#waiters.push(waiter);
      // One listener per signal however many callers wait on it (see onAnyAbort).
      const off = onAnyAbort(live, () => {
        const at = this.#waiters.indexOf(waiter);
        if (at >= 0) this.#waiters.splice(at, 1);
        waiter('aborted');
        this.dispatch();
      });
      this.dispatch();
    });
  }

  /** Hands out slots in order while the policy admits them; arms a timer for a delay. */
  dispatch(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    while (this.#waiters.length > 0 && this.#policy.admits(this.#taken)) {
      const delay = this.#policy.delayMs(this.#clock.now());
      if (delay > 0) {
        this.heldAt = this.#clock.now();
        this.#cancelTimer = this.#clock.schedule(() => this.dispatch(), delay);
        return;
      }
      (this.#waiters.shift() as (slot: ConcurrencySlot) => void)(this.#take());
    }
  }

  #take(): ConcurrencySlot {
    this.#taken += 1;
    this.#policy.taken(this.#clock.now());
    // Until its request leaves (it may wait for --rate or the ledger) a slot is taken, not in flight.
    let sentAt = this.#clock.now();
    let inFlightAtSend = 0;
    let state: 'taken' | 'sent' | 'released' = 'taken';
    return {
      sent: () => {
        if (state !== 'taken') return;
        state = 'sent';
        sentAt = this.#clock.now();
        this.#inFlight.sent();
        inFlightAtSend = this.#inFlight.now;
        this.#policy.sent(sentAt);
      },
      release: (sample) => {
        if (state === 'released') return;
        if (state === 'sent') this.#inFlight.answered();
        state = 'released';
        this.#taken -= 1;
        this.#policy.released(sample, sentAt, inFlightAtSend);
        this.dispatch();
      },
    };
  }
}
