/**
 * The sandbox's fault injection and load model: the settings, their validation, and the seeded
 * draws that decide what happens to each request. The fault draws come from one seeded PRNG so
 * that a sequential test (or a benchmark) sees the same sequence of faults each time it runs with
 * the same seed; the log-normal latency draws come from a second stream of the same seed, so that
 * switching them on does not shift the fault sequence.
 */
import { QuoteBatchError } from '../errors.js';
import { ANNOUNCE_STYLES, unannounceable, type AnnounceStyle } from './announce.js';
import { formatRpsSchedule, parseRpsSchedule, SCHEDULE_SYNTAX, type RpsMode } from './rate-limit.js';

/** What the sandbox does wrong on purpose, and how much load it takes. Every fault is off by default. */
export interface SandboxFaults {
  /** Delay in milliseconds before every answer (or reset) of an operation; the median when `latencySigma` > 0. */
  latencyMs: number;
  /** Log-normal sigma of that delay: `latencyMs · e^(sigma·Z)`, Z standard normal (0 = always `latencyMs`). */
  latencySigma: number;
  /** Extra random delay, uniform in [0, jitterMs), added to `latencyMs`. */
  jitterMs: number;
  /** Share (0..1) of operation requests answered 500 or 503 (half each) before any processing. */
  failRate: number;
  /** Share (0..1) of operation requests answered 429 with `Retry-After`, before any processing. */
  throttleRate: number;
  /**
   * Value of `Retry-After` on throttled, outage and full-queue answers; the least one on rate-capped
   * answers (which also wait for the cap to admit again, rounded up to whole seconds).
   */
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
  /** How the cap counts: `window`, at most N per wall-clock second; `bucket`, a token bucket refilled at N per second. */
  rpsMode: RpsMode;
  /** The token bucket's size, the most requests admitted at once after a quiet spell (0 = the cap in force, at least 1). */
  rpsBurst: number;
  /**
   * How the cap refuses: `json`, the operation's error body with `Retry-After`; `html`, a gateway's
   * HTML error page and no `Retry-After` (as nginx's `limit_req` or a CDN answers).
   */
  rpsCapAnswer: 'json' | 'html';
  /**
   * Caps that change over time, `"seconds:cap,…"` counted from start or reset, e.g. `"0:40,30:20"`
   * ('' = none). From its first step on it replaces `rpsCap`.
   */
  rpsCapSchedule: string;
  /** At most this many quote/lead requests worked on at once (0 = no limit); the rest wait in a FIFO queue. */
  capacity: number;
  /** How many quote/lead requests may wait for `capacity`; the next one is answered 503 at once. */
  queueLimit: number;
  /** While true, every operation answers 503 at once. */
  outage: boolean;
  /** Share (0..1) of otherwise good validate requests answered 500 "Internal server error" (an upstream fault, spec §7). */
  upstreamErrorRate: number;
  /**
   * How the gateway announces the limits in force on every answer: not at all (`none`), as Kong's
   * rate-limiting plugin, as the IETF draft's `RateLimit-Policy`/`RateLimit`, or as Envoy's
   * `X-RateLimit-*` (docs/sandbox.md).
   */
  announceLimit: AnnounceStyle;
  /** The announced rate cap is this many times the one enforced (a gateway that promises more than it keeps); 1 = the truth. */
  announceFactor: number;
  /** At most this many quote/lead requests per quota window (0 = no quota); then 429 with `Retry-After` until the window ends. */
  quota: number;
  /** The quota's window, seconds, counted from start (or reset). */
  quotaWindowSeconds: number;
}

export const DEFAULT_FAULTS: Readonly<SandboxFaults> = Object.freeze({
  latencyMs: 0,
  latencySigma: 0,
  jitterMs: 0,
  failRate: 0,
  throttleRate: 0,
  retryAfterSeconds: 1,
  retryAfterFormat: 'seconds',
  resetBeforeRate: 0,
  resetAfterRate: 0,
  hangRate: 0,
  rpsCap: 0,
  rpsMode: 'window',
  rpsBurst: 0,
  rpsCapAnswer: 'json',
  rpsCapSchedule: '',
  capacity: 0,
  queueLimit: 1000,
  outage: false,
  upstreamErrorRate: 0,
  announceLimit: 'none',
  announceFactor: 1,
  quota: 0,
  quotaWindowSeconds: 3600,
});

/** The longest delay the sandbox waits (a day): a log-normal tail must not overflow a timer. */
export const MAX_DELAY_MS = 86_400_000;

const isNumberIn = (min: number, max: number) => (value: unknown): boolean =>
  typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max;
const isShare = isNumberIn(0, 1);
const isAmount = isNumberIn(0, MAX_DELAY_MS);
const isCount = (value: unknown): boolean => isAmount(value) && Number.isInteger(value);

/** Per setting: what it expects (for the error message) and the check. `rpsCapSchedule` is parsed apart. */
const CHECKS: Readonly<Record<Exclude<keyof SandboxFaults, 'rpsCapSchedule'>, readonly [string, (value: unknown) => boolean]>> = {
  latencyMs: ['a non-negative number', isAmount],
  latencySigma: ['a number from 0 to 3', isNumberIn(0, 3)],
  jitterMs: ['a non-negative number', isAmount],
  failRate: ['a number from 0 to 1', isShare],
  throttleRate: ['a number from 0 to 1', isShare],
  retryAfterSeconds: ['a non-negative number', isAmount],
  retryAfterFormat: ['"seconds" or "http-date"', (value) => value === 'seconds' || value === 'http-date'],
  resetBeforeRate: ['a number from 0 to 1', isShare],
  resetAfterRate: ['a number from 0 to 1', isShare],
  hangRate: ['a number from 0 to 1', isShare],
  rpsCap: ['a non-negative number', isAmount],
  rpsMode: ['"window" or "bucket"', (value) => value === 'window' || value === 'bucket'],
  rpsBurst: ['a non-negative number', isAmount],
  rpsCapAnswer: ['"json" or "html"', (value) => value === 'json' || value === 'html'],
  capacity: ['a non-negative integer', isCount],
  queueLimit: ['a non-negative integer', isCount],
  outage: ['true or false', (value) => typeof value === 'boolean'],
  upstreamErrorRate: ['a number from 0 to 1', isShare],
  announceLimit: [ANNOUNCE_STYLES.map((style) => `"${style}"`).join(', '), (value) => (ANNOUNCE_STYLES as readonly unknown[]).includes(value)],
  announceFactor: ['a number from 0.01 to 100', isNumberIn(0.01, 100)],
  quota: ['a non-negative integer', isCount],
  quotaWindowSeconds: ['a whole number of seconds from 1 to 31622400', (value) => isCount(value) && (value as number) >= 1 && (value as number) <= 31_622_400],
};
const FAULT_KEYS: ReadonlySet<string> = new Set(Object.keys(DEFAULT_FAULTS));

/**
 * Checks a partial fault setting (from code, a flag or `POST /__sandbox/faults`) and merges it
 * into `base`. Throws a usage error naming the first bad member. A schedule is stored in its
 * canonical text.
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
    if (key === 'rpsCapSchedule') {
      const parsed = typeof value === 'string' ? parseRpsSchedule(value) : { ok: false as const, reason: `got ${JSON.stringify(value)}` };
      if (!parsed.ok) throw new QuoteBatchError('E_USAGE', `sandbox faults: rpsCapSchedule expects ${SCHEDULE_SYNTAX}; ${parsed.reason}`);
      merged.rpsCapSchedule = formatRpsSchedule(parsed.steps);
      continue;
    }
    const [expects, check] = CHECKS[key as keyof typeof CHECKS];
    if (!check(value)) {
      throw new QuoteBatchError('E_USAGE', `sandbox faults: ${key} expects ${expects}, got ${JSON.stringify(value)}`);
    }
    (merged as unknown as Record<string, unknown>)[key] = value;
  }
  const quotaUnannounced = merged.quota > 0 ? unannounceable(merged.announceLimit, merged.quotaWindowSeconds) : null;
  if (quotaUnannounced !== null) throw new QuoteBatchError('E_USAGE', `sandbox faults: ${quotaUnannounced}`);
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
export function formatRetryAfter(format: SandboxFaults['retryAfterFormat'], retryAfterSeconds: number, nowMs: number): string {
  const seconds = Math.max(0, Math.ceil(retryAfterSeconds));
  if (format === 'seconds') return String(seconds);
  // An HTTP date has whole-second precision: round up so the caller never retries early.
  return new Date(Math.ceil(nowMs / 1000) * 1000 + seconds * 1000).toUTCString();
}

/**
 * Standard normal draws (Box–Muller) from their own mulberry32 stream, derived from the sandbox's
 * seed: the latency draws never shift the fault draws of {@link drawFaults}.
 */
export function createNormalRandom(seed: number): () => number {
  const uniform = createRandom((seed ^ 0x9e3779b9) >>> 0);
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const value = spare;
      spare = undefined;
      return value;
    }
    // 1 - u lies in (0, 1]: the logarithm stays finite.
    const radius = Math.sqrt(-2 * Math.log(1 - uniform()));
    const angle = 2 * Math.PI * uniform();
    spare = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  };
}

/**
 * The delay of one request: `latencyMs`, log-normal around it as the median when `latencySigma`
 * is set (`normal` is called only then), plus the uniform jitter.
 */
export function drawDelayMs(faults: Readonly<SandboxFaults>, jitter: number, normal: () => number): number {
  const base = faults.latencySigma > 0 && faults.latencyMs > 0
    ? faults.latencyMs * Math.exp(faults.latencySigma * normal())
    : faults.latencyMs;
  return Math.min(MAX_DELAY_MS, base + jitter * faults.jitterMs);
}
