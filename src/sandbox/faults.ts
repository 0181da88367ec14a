/**
 * The sandbox's fault injection: the settings, their validation, and the seeded draws that decide
 * what happens to each request. Every draw comes from one seeded PRNG so that a sequential test
 * (or a benchmark) sees the same sequence of faults each time it runs with the same seed.
 */
import { QuoteBatchError } from '../errors.js';

/** What the sandbox does wrong on purpose. Every fault is off by default. */
export interface SandboxFaults {
  /** Fixed delay in milliseconds before every answer (or reset) of an operation. */
  latencyMs: number;
  /** Extra random delay, uniform in [0, jitterMs), added to `latencyMs`. */
  jitterMs: number;
  /** Share (0..1) of operation requests answered 500 or 503 (half each) before any processing. */
  failRate: number;
  /** Share (0..1) of operation requests answered 429 with `Retry-After`, before any processing. */
  throttleRate: number;
  /** Value of `Retry-After` on throttled answers (also used for the `rpsCap` answers). */
  retryAfterSeconds: number;
  /** `seconds` sends `Retry-After: 2`; `http-date` sends an IMF-fixdate that many seconds ahead. */
  retryAfterFormat: 'seconds' | 'http-date';
  /** Share (0..1) of requests whose connection is destroyed after the body arrived and before it is processed. */
  resetBeforeRate: number;
  /**
   * Share (0..1) of requests that are processed (the partner did the work) and whose connection is
   * then destroyed with no answer: the caller never learns the outcome.
   */
  resetAfterRate: number;
  /** Share (0..1) of requests that are processed and then never answered (until the caller gives up or the sandbox closes). */
  hangRate: number;
  /** At most this many operation requests per second across all clients (0 = no cap); the excess is answered 429. */
  rpsCap: number;
  /** While true, every operation answers 503 at once. */
  outage: boolean;
  /** Share (0..1) of otherwise good validate requests answered 500 "Internal server error" (an upstream fault, spec §7). */
  upstreamErrorRate: number;
}

export const DEFAULT_FAULTS: Readonly<SandboxFaults> = Object.freeze({
  latencyMs: 0,
  jitterMs: 0,
  failRate: 0,
  throttleRate: 0,
  retryAfterSeconds: 1,
  retryAfterFormat: 'seconds',
  resetBeforeRate: 0,
  resetAfterRate: 0,
  hangRate: 0,
  rpsCap: 0,
  outage: false,
  upstreamErrorRate: 0,
});

const RATE_KEYS = [
  'failRate', 'throttleRate', 'resetBeforeRate', 'resetAfterRate', 'hangRate', 'upstreamErrorRate',
] as const;
const COUNT_KEYS = ['latencyMs', 'jitterMs', 'retryAfterSeconds', 'rpsCap'] as const;
const FAULT_KEYS: ReadonlySet<string> = new Set(Object.keys(DEFAULT_FAULTS));

/**
 * Checks a partial fault setting (from code, a flag or `POST /__sandbox/faults`) and merges it
 * into `base`. Throws a usage error naming the first bad member.
 */
export function mergeFaults(base: Readonly<SandboxFaults>, partial: unknown): SandboxFaults {
  if (partial === null || typeof partial !== 'object' || Array.isArray(partial)) {
    throw new QuoteBatchError('E_USAGE', 'sandbox faults: expected an object of fault settings');
  }
  const merged: SandboxFaults = { ...base };
  for (const [key, value] of Object.entries(partial)) {
    if (value === undefined) continue;
    if (!FAULT_KEYS.has(key)) {
      throw new QuoteBatchError('E_USAGE', `sandbox faults: unknown setting "${key}" (known: ${[...FAULT_KEYS].join(', ')})`);
    }
    if ((RATE_KEYS as readonly string[]).includes(key)) {
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
        throw new QuoteBatchError('E_USAGE', `sandbox faults: ${key} expects a number from 0 to 1, got ${JSON.stringify(value)}`);
      }
    } else if ((COUNT_KEYS as readonly string[]).includes(key)) {
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 86_400_000) {
        throw new QuoteBatchError('E_USAGE', `sandbox faults: ${key} expects a non-negative number, got ${JSON.stringify(value)}`);
      }
    } else if (key === 'retryAfterFormat') {
      if (value !== 'seconds' && value !== 'http-date') {
        throw new QuoteBatchError('E_USAGE', `sandbox faults: retryAfterFormat expects "seconds" or "http-date", got ${JSON.stringify(value)}`);
      }
    } else if (key === 'outage' && typeof value !== 'boolean') {
      throw new QuoteBatchError('E_USAGE', `sandbox faults: outage expects true or false, got ${JSON.stringify(value)}`);
    }
    (merged as unknown as Record<string, unknown>)[key] = value;
  }
  return merged;
}

/** mulberry32: tiny, fast, good enough for fault shares; returns floats in [0, 1). */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The draws made for one request, always all of them and in this order, whatever is switched on. */
export interface FaultDraws {
  fail: number;
  failKind: number;
  throttle: number;
  resetBefore: number;
  resetAfter: number;
  hang: number;
  upstream: number;
  jitter: number;
}

/**
 * Draws a fixed number of values per request, so that turning one fault on does not shift the
 * sequence of another: with the same seed and the same request order, a run reproduces exactly.
 */
export function drawFaults(random: () => number): FaultDraws {
  return {
    fail: random(),
    failKind: random(),
    throttle: random(),
    resetBefore: random(),
    resetAfter: random(),
    hang: random(),
    upstream: random(),
    jitter: random(),
  };
}

/** The `Retry-After` header value in the configured format. */
export function formatRetryAfter(faults: Readonly<SandboxFaults>, nowMs: number): string {
  const seconds = Math.max(0, Math.ceil(faults.retryAfterSeconds));
  if (faults.retryAfterFormat === 'seconds') return String(seconds);
  // An HTTP date has whole-second precision: round up so the caller never retries early.
  return new Date(Math.ceil(nowMs / 1000) * 1000 + seconds * 1000).toUTCString();
}
