/**
 * Retry timing as pure functions (after got's `calculate-retry-delay.ts`): no clock, no timers, no
 * randomness of their own, so that the policy can be tested as a table and as properties.
 */

/** Input of {@link calculateRetryDelay}. */
export interface RetryDelayInput {
  /** 1-based number of the attempt that just failed. */
  attempt: number;
  /** The partner's `Retry-After`, already converted to milliseconds (see {@link parseRetryAfter}). */
  retryAfterMs?: number | undefined;
  /** Ceiling of the first back-off; doubles with every attempt. */
  baseMs: number;
  /** Largest ceiling of the exponential back-off. */
  capMs: number;
  /** Largest `Retry-After` honoured; beyond it the call gives up rather than sleep for hours. */
  retryAfterCapMs: number;
  /** A source of numbers in [0, 1); `Math.random` in production, a fixed function in tests. */
  random: () => number;
}

/**
 * Milliseconds to wait before the next attempt, or `null` when the partner asked for a wait longer
 * than `retryAfterCapMs` (give up now: the row stays retryable for the next run).
 *
 * - Without `Retry-After`: full jitter, a uniform draw in [0, min(capMs, baseMs·2^(attempt-1))),
 *   which spreads a crowd of workers better than equal or decorrelated jitter.
 * - With `Retry-After`: at least what the partner asked for, plus a jitter below `min(baseMs, capMs)`
 *   so that workers paused together do not all come back on the same millisecond.
 */
export function calculateRetryDelay(input: RetryDelayInput): number | null {
  const baseMs = Math.max(0, input.baseMs);
  const capMs = Math.max(0, input.capMs);
  const draw = clampUnit(input.random());
  if (input.retryAfterMs !== undefined && Number.isFinite(input.retryAfterMs)) {
    const asked = Math.max(0, input.retryAfterMs);
    if (asked > input.retryAfterCapMs) return null;
    return Math.ceil(asked) + Math.floor(draw * Math.min(baseMs, capMs));
  }
  const attempt = Number.isFinite(input.attempt) ? Math.max(1, Math.floor(input.attempt)) : 1;
  // 2^(attempt-1) overflows to Infinity for huge attempts; Math.min then keeps the cap.
  const ceiling = Math.min(capMs, baseMs * 2 ** (attempt - 1));
  return Math.floor(draw * ceiling);
}

/**
 * The longest wait a `Retry-After` is read as: 100 years. A broken gateway may send any number
 * (`18446744073709551615`, -1 as an unsigned 64-bit number); past about 270,000 years a date
 * cannot even hold it.
 */
export const MAX_RETRY_AFTER_MS = 100 * 365.25 * 86_400_000;

/**
 * Converts a `Retry-After` header (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) into
 * milliseconds from `now`, at most {@link MAX_RETRY_AFTER_MS}. A date in the past gives 0;
 * anything unreadable gives `undefined`.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  // Only an HTTP-date shape (a month name and hh:mm:ss; IMF-fixdate, RFC 850 or asctime) goes to
  // Date.parse, which would otherwise read "1.5", "-3" or "abc 12" as some date.
  if (!/[A-Za-z]{3}/.test(text) || !/\b\d{1,2}:\d{2}:\d{2}\b/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

function clampUnit(n: number): number {
  if (!Number.isFinite(n) || n < 0) return 0;
  // A generator that returns 1 (out of contract) must still not exceed the ceiling.
  return n >= 1 ? 1 - Number.EPSILON : n;
}
