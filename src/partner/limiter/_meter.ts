/**
 * Counts of events by time, in 100-ms buckets over the last few seconds (constant memory): an event
 * may be counted at a past time (an answer, at the time its request left, as a rate cap counts it).
 */
export class EventMeter {
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
   * if later, but over a second at least: rate caps count per second, so the 40 requests a cap of
   * 40/s admits in a run's first half-second are 40/s, not 80/s.
   */
  perSecond(to: number, spanMs: number): number {
    const last = Math.floor(to / EventMeter.#BUCKET_MS);
    const first = Math.max(last - spanMs / EventMeter.#BUCKET_MS + 1, this.#firstKey);
    if (first > last) return 0;
    let total = 0;
    for (let key = first; key <= last; key += 1) {
      const slot = EventMeter.#slot(key);
      if (this.#keys[slot] === key) total += this.#counts[slot] as number;
    }
    return (total * 1000) / Math.max(1000, (last - first + 1) * EventMeter.#BUCKET_MS);
  }

  static #slot(key: number): number {
    return ((key % EventMeter.#BUCKETS) + EventMeter.#BUCKETS) % EventMeter.#BUCKETS;
  }
}

/** What the pace is told besides the answer itself (`PaceAnswer`), measured around the requests. */
export interface Measured {
  acceptedRate: number;
  sendRate: number;
  recentShare: number;
  burstShare: number;
  answeringForMs: number;
}

/** The rates and shares the pace learns from: requests sent and accepted (by the time they left), the last answers. */
export class Measures {
  readonly #accepted = new EventMeter();
  readonly #sent = new EventMeter();
  readonly #recent: boolean[] = [];
  readonly #recentAnswers: number;
  readonly #burstAnswers: number;
  #firstAnswerAt = Number.POSITIVE_INFINITY;

  constructor(recentAnswers: number, burstAnswers: number) {
    this.#recentAnswers = recentAnswers;
    this.#burstAnswers = burstAnswers;
  }

  sent(at: number): void {
    this.#sent.add(at);
  }

  /** Counts one answer to a request sent at `sentAt`, and measures at `now` with answers `latencyMs` long. */
  answered(signal: 'ok' | 'throttled' | 'error', sentAt: number, now: number, latencyMs: number): Measured {
    this.#firstAnswerAt = Math.min(this.#firstAnswerAt, now);
    if (signal === 'ok') this.#accepted.add(sentAt);
    this.#recent.push(signal === 'throttled');
    if (this.#recent.length > this.#recentAnswers) this.#recent.shift();
    // Counted up to when most answers of that time are in, as a rate cap counts them.
    const answersIn = now - Math.min(2000, 1.5 * latencyMs);
    const throttledIn = (answers: readonly boolean[]): number => answers.filter(Boolean).length;
    return {
      acceptedRate: this.#accepted.perSecond(answersIn, 2000),
      sendRate: this.#sent.perSecond(answersIn, 2000),
      // Before there are as many answers, the missing ones count as successes: a share needs that much evidence.
      recentShare: throttledIn(this.#recent) / this.#recentAnswers,
      burstShare: throttledIn(this.#recent.slice(-this.#burstAnswers)) / this.#burstAnswers,
      answeringForMs: now - this.#firstAnswerAt,
    };
  }
}
