/**
 * The sandbox's requests-per-second cap: the schedule of caps over time and the two ways of
 * counting against a cap (a fixed one-second window, or a token bucket). Pure apart from the
 * gate's own state; the clocks are passed in, so the semantics are table-tested without waiting.
 */

/** How the cap counts: at most N per wall-clock second, or a token bucket refilled at N per second. */
export type RpsMode = 'window' | 'bucket';

/** From `atSeconds` after start (or reset) on, the cap is `rps` (0 = no cap). */
export interface RpsStep {
  atSeconds: number;
  rps: number;
}

export type ScheduleParse = { ok: true; steps: RpsStep[] } | { ok: false; reason: string };

/** What a schedule looks like, for error messages. */
export const SCHEDULE_SYNTAX = '"seconds:cap,…" such as "0:40,30:20" (seconds increasing, caps of 0 or more; 0 = no cap)';

const NUMBER = /^\d+(?:\.\d+)?$/;

/**
 * Parses `"0:40,30:20"` (40/s from the start, 20/s from 30 s on). The empty text is no schedule.
 * Seconds must strictly increase; spaces around the numbers are allowed.
 */
export function parseRpsSchedule(text: string): ScheduleParse {
  if (text.trim() === '') return { ok: true, steps: [] };
  const steps: RpsStep[] = [];
  for (const item of text.split(',')) {
    const parts = item.split(':').map((part) => part.trim());
    if (parts.length !== 2 || !NUMBER.test(parts[0]!) || !NUMBER.test(parts[1]!)) {
      return { ok: false, reason: `"${item.trim()}" is not seconds:cap` };
    }
    const step = { atSeconds: Number(parts[0]), rps: Number(parts[1]) };
    const previous = steps.at(-1);
    if (previous !== undefined && step.atSeconds <= previous.atSeconds) {
      return { ok: false, reason: `seconds must increase, got ${previous.atSeconds} then ${step.atSeconds}` };
    }
    steps.push(step);
  }
  return { ok: true, steps };
}

/** The canonical text of a schedule (what `GET /__sandbox/faults` shows). */
export function formatRpsSchedule(steps: readonly RpsStep[]): string {
  return steps.map((step) => `${step.atSeconds}:${step.rps}`).join(',');
}

/** The cap in force `elapsedSeconds` after start: the last step reached, else `fallback` (the fixed `rpsCap`). */
export function capAt(steps: readonly RpsStep[], fallback: number, elapsedSeconds: number): number {
  let cap = fallback;
  // Schedules have a handful of steps: a scan is cheaper than anything cleverer.
  for (const step of steps) {
    if (step.atSeconds > elapsedSeconds) break;
    cap = step.rps;
  }
  return cap;
}

/**
 * Admits or refuses one request against a cap. `admit` returns 0 when the request may pass, else
 * how many seconds (> 0) until the cap would admit one again: the rest of the current second for
 * the window, the time to the next whole token for the bucket.
 */
export class RateGate {
  private windowSecond = -1;
  private windowCount = 0;
  /** NaN until the bucket is first used: it starts full. */
  private tokens = Number.NaN;
  private refilledAtMs = 0;

  /**
   * @param cap requests per second (> 0)
   * @param burst the bucket's size; 0 = the cap (at least 1)
   * @param monotonicMs a monotonic clock (the bucket's refill)
   * @param wallMs the wall clock (the window is a wall-clock second, as a partner's would be)
   */
  admit(mode: RpsMode, cap: number, burst: number, monotonicMs: number, wallMs: number): number {
    if (mode === 'window') {
      const second = Math.floor(wallMs / 1000);
      if (second !== this.windowSecond) {
        this.windowSecond = second;
        this.windowCount = 0;
      }
      if (this.windowCount < cap) {
        this.windowCount += 1;
        return 0;
      }
      return ((second + 1) * 1000 - wallMs) / 1000;
    }
    const size = burst > 0 ? burst : Math.max(1, cap);
    this.tokens = Number.isNaN(this.tokens)
      ? size
      : Math.min(size, this.tokens + ((monotonicMs - this.refilledAtMs) / 1000) * cap);
    this.refilledAtMs = monotonicMs;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return (1 - this.tokens) / cap;
  }

  /**
   * Where the cap stands after the requests admitted so far, as a gateway announces it: the requests
   * it would still admit now, and the seconds until more are admitted (the end of the window second;
   * the bucket's next token, or a whole refill period when it is full).
   */
  peek(mode: RpsMode, cap: number, burst: number, monotonicMs: number, wallMs: number): { remaining: number; resetS: number } {
    if (mode === 'window') {
      const second = Math.floor(wallMs / 1000);
      const used = second === this.windowSecond ? this.windowCount : 0;
      return { remaining: Math.max(0, Math.floor(cap) - used), resetS: ((second + 1) * 1000 - wallMs) / 1000 };
    }
    const size = burst > 0 ? burst : Math.max(1, cap);
    const tokens = Number.isNaN(this.tokens) ? size : Math.min(size, this.tokens + ((monotonicMs - this.refilledAtMs) / 1000) * cap);
    return { remaining: Math.floor(tokens), resetS: tokens >= size ? 1 / cap : (1 - (tokens % 1)) / cap };
  }

  /** Forgets the counts: the window starts over and the bucket is full again. */
  reset(): void {
    this.windowSecond = -1;
    this.windowCount = 0;
    this.tokens = Number.NaN;
  }
}

/**
 * A quota of quote/lead requests per fixed window (`--quota N --quota-window 1h`), its windows
 * counted from the sandbox's start or reset. Requests refused for another reason (the rate cap) do
 * not count, as with Kong.
 */
export class QuotaGate {
  private window = -1;
  private used = 0;

  /** 0 when the quota has room for a request `sinceStartMs` after the start; else the seconds until its window ends. */
  check(quota: number, windowMs: number, sinceStartMs: number): number {
    const { remaining, resetS } = this.peek(quota, windowMs, sinceStartMs);
    return remaining > 0 ? 0 : resetS;
  }

  /** Counts one request against the window it arrives in. */
  take(windowMs: number, sinceStartMs: number): void {
    this.roll(windowMs, sinceStartMs);
    this.used += 1;
  }

  /** Requests left in the current window, and seconds until it ends. */
  peek(quota: number, windowMs: number, sinceStartMs: number): { remaining: number; resetS: number } {
    this.roll(windowMs, sinceStartMs);
    return { remaining: Math.max(0, quota - this.used), resetS: ((this.window + 1) * windowMs - sinceStartMs) / 1000 };
  }

  reset(): void {
    this.window = -1;
    this.used = 0;
  }

  private roll(windowMs: number, sinceStartMs: number): void {
    const window = Math.floor(Math.max(0, sinceStartMs) / windowMs);
    if (window !== this.window) {
      this.window = window;
      this.used = 0;
    }
  }
}
