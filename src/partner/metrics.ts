/**
 * What the client saw since the last sample: the pipeline takes one a second into `run_samples`
 * (the report's "partner's limit" charts). Memory is bounded whatever the rate: at most
 * {@link MAX_LATENCIES} latencies are kept per sample (every n-th beyond that).
 */
import type { AttemptClass } from './_classify.js';

export interface MetricsSample {
  /** Requests allowed in flight at the time of the sample. */
  limit: number;
  /** Requests in flight during the sample, on average over its time (2 decimals). */
  inFlight: number;
  /** The most requests in flight at once during the sample. */
  inFlightMax: number;
  /** Requests per second the limiter paced sends at, at the time of the sample; null when not pacing. */
  paceRate: number | null;
  /** Requests per second the partner's announced limit allowed at the time of the sample; null when it announced none (or it was distrusted). */
  announcedRate: number | null;
  /** Attempts answered (or failed) since the last sample. */
  attempts: number;
  /** Of those: answered 429. */
  throttled: number;
  /** Of those: other transient failures (5xx, with or without Retry-After, time-outs, resets). */
  errors: number;
  /** Of those: quotes and leads answered (not a transient failure; a 429 counts): validations may answer while quotes fail. */
  submitsAnswered: number;
  /** Median latency of those attempts; null when there were none. */
  latencyP50Ms: number | null;
}

const MAX_LATENCIES = 2048;

export class CallMetrics {
  #attempts = 0;
  #throttled = 0;
  #errors = 0;
  #submitsAnswered = 0;
  #latencies: number[] = [];

  /** Counts one attempt; `submit` for a quote or lead (not an agent validation). */
  record(latencyMs: number, cls: AttemptClass, submit: boolean): void {
    this.#attempts += 1;
    const failed = !cls.throttled && (cls.breaker === 'failure' || cls.breaker === 'in_doubt');
    if (cls.throttled) this.#throttled += 1;
    else if (failed) this.#errors += 1;
    if (submit && !failed) this.#submitsAnswered += 1;
    if (this.#latencies.length < MAX_LATENCIES) this.#latencies.push(latencyMs);
    else if (this.#attempts % Math.ceil(this.#attempts / MAX_LATENCIES) === 0) this.#latencies[this.#attempts % MAX_LATENCIES] = latencyMs;
  }

  /** Returns what was seen since the last call, and starts a new sample. */
  take(limit: number, inFlight: number, inFlightMax: number, paceRate: number | null, announcedRate: number | null = null): MetricsSample {
    const sorted = this.#latencies.sort((a, b) => a - b);
    const sample: MetricsSample = {
      limit,
      inFlight,
      inFlightMax,
      paceRate,
      announcedRate,
      attempts: this.#attempts,
      throttled: this.#throttled,
      errors: this.#errors,
      submitsAnswered: this.#submitsAnswered,
      latencyP50Ms: sorted.length === 0 ? null : (sorted[Math.ceil(sorted.length / 2) - 1] as number),
    };
    this.#attempts = 0;
    this.#throttled = 0;
    this.#errors = 0;
    this.#submitsAnswered = 0;
    this.#latencies = [];
    return sample;
  }
}
