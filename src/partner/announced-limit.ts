/**
 * The limit the partner announces in its headers (`rate-limit-headers.ts` reads them), kept across
 * its answers (docs/announced-limits.md):
 *
 * - **the rate** sends stay within ({@link ceilingOf}): each window's limit over its length, a little
 *   under it, and for a window whose reset is said precisely enough, its remaining quota spread over
 *   what is left of it. The limiter's pace never goes above it (`AdaptiveLimiter.announceCeiling`);
 * - **the gate** ({@link gateOf}): a window whose remaining quota is spent holds every request until
 *   its reset when that is within `--max-retry-after`, else the quota is spent ("the partner's quota
 *   for this key is spent until …") and the client halts;
 * - **distrust**: 429s to requests sent within what it announces mean the partner does not keep to
 *   it; it is ignored for the rest of the run, and the pace is learned from the 429s alone.
 *
 * What is left of a window counts our own requests: the remaining quota an answer gave, less the
 * requests sent after the one it answered (which the partner had not counted yet). The pure
 * functions decide; {@link AnnouncedLimit} keeps the state for one client.
 */
import type { Announcement, AnnouncementStyle } from './rate-limit-headers.js';

/** The rules' constants; docs/announced-limits.md says why each has its value. */
export const ANNOUNCED = {
  /** Sends keep to this share of a window's rate: our own timers' jitter never puts one more request than the limit in a window. */
  share: 0.99,
  /** A reset said as at least this many seconds is precise enough to hold requests until it and to spread a quota over it (resets are whole seconds). */
  timedResetS: 2,
  /** 429s among the last {@link ANNOUNCED.distrustAnswers} answers to requests sent within the announced limit that distrust it. */
  distrustThrottled: 4,
  distrustAnswers: 200,
} as const;

/** One announced window as the tracker keeps it (its times on the client's monotonic clock, ms). */
export interface TrackedWindow {
  key: string;
  name: string | null;
  limit: number | null;
  /** The window's length as announced; null when not said. */
  windowS: number | null;
  /** The longest reset announced for it, seconds: the window is at least that long. */
  longestResetS: number;
  /** Requests left as of the request numbered {@link sendNo}; null when not said. */
  remaining: number | null;
  /** When more quota comes (ms); null when not said. */
  resetAt: number | null;
  /** Whether that reset was said as {@link ANNOUNCED.timedResetS} or more: holds and spreading use it. */
  resetTimed: boolean;
  /** The number of the request whose answer said it (see {@link AnnouncedLimit.reserve}). */
  sendNo: number;
  /**
   * What the last answers in this window said is left, each plus its request's number (that is, as
   * if no request had left after it): what is left now is their median less the requests that left.
   * One answer alone would do if requests reached the partner in the order they left; over several
   * sockets a few overtake one another, and an answer then counts them twice or not at all.
   */
  bases: readonly number[];
}

/** Answers whose {@link TrackedWindow.bases} are kept: the median of 16 is off by none of a few requests overtaken. */
const BASES = 16;
/** A reset later than the one standing by more than this is a new window (resets are said in whole seconds, from when each request left). */
const SAME_WINDOW_MS = 1500;

/** The window's length, as announced or as long as its resets have shown; null when neither is known. */
export function lengthOf(w: TrackedWindow): number | null {
  if (w.windowS !== null) return w.windowS;
  return w.longestResetS > 0 ? Math.max(1, w.longestResetS) : null;
}

/** A quota rather than a rate: a window longer than the run would wait for (`--max-retry-after`). It is spent, not spread. */
export function isQuota(w: TrackedWindow, maxRetryAfterMs: number): boolean {
  const length = lengthOf(w);
  return length !== null && length * 1000 > maxRetryAfterMs;
}

/** Requests the window still allows now (`sends`: requests counted so far); null when unknown or its reset passed. */
export function leftOf(w: TrackedWindow, now: number, sends: number): number | null {
  if (w.bases.length === 0) return null;
  if (w.resetAt !== null && w.resetAt <= now) return null;
  return median(w.bases) - sends;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : Math.floor(((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2);
}

/**
 * The rate (requests/s) the announced windows allow now, or null when none says one: the lowest of
 * each rate window's limit over its length (× {@link ANNOUNCED.share}) and, when its reset is timed,
 * its remaining quota spread over the time to it. Quotas (see {@link isQuota}) set no rate: they are spent.
 */
export function ceilingOf(windows: Iterable<TrackedWindow>, now: number, sends: number, maxRetryAfterMs: number): number | null {
  let ceiling = Number.POSITIVE_INFINITY;
  for (const w of windows) {
    if (isQuota(w, maxRetryAfterMs)) continue;
    const length = lengthOf(w);
    if (w.limit !== null && length !== null) ceiling = Math.min(ceiling, (ANNOUNCED.share * w.limit) / length);
    const left = leftOf(w, now, sends);
    // A spent window is the gate's: it holds every request until its reset.
    if (w.resetTimed && w.resetAt !== null && left !== null && left > 0) ceiling = Math.min(ceiling, (left * 1000) / (w.resetAt - now));
  }
  return Number.isFinite(ceiling) ? ceiling : null;
}

/**
 * Whether a request may leave now: yes; not yet, what is left being taken by requests let through
 * that have not left yet (`settling`: if they do not leave after all, it is this one's); not before
 * `until` (ms, a spent window's reset within `--max-retry-after`); or the quota is spent past it.
 */
export type Gate =
  | { kind: 'send' }
  | { kind: 'settling' }
  | { kind: 'wait'; until: number; window: TrackedWindow }
  | { kind: 'spent'; until: number; window: TrackedWindow };

/**
 * The gate of {@link AnnouncedLimit}: the latest reset of the windows spent now (timed resets only).
 * `sends`: the requests that left; `reserved`: those let through that have not left yet.
 */
export function gateOf(windows: Iterable<TrackedWindow>, now: number, sends: number, maxRetryAfterMs: number, reserved = 0): Gate {
  let binding: TrackedWindow | undefined;
  let settling = false;
  for (const w of windows) {
    if (!w.resetTimed || w.resetAt === null) continue;
    const left = leftOf(w, now, sends);
    if (left === null || left - reserved > 0) continue;
    if (left > 0) settling = true;
    else if (binding === undefined || w.resetAt > (binding.resetAt as number)) binding = w;
  }
  if (binding === undefined) return settling ? { kind: 'settling' } : { kind: 'send' };
  const until = binding.resetAt as number;
  return { kind: until - now > maxRetryAfterMs ? 'spent' : 'wait', until, window: binding };
}

/** `40 requests per second`, `500 requests per 1h`, `42 requests left` — for messages. */
export function describeWindow(w: Pick<TrackedWindow, 'limit' | 'windowS' | 'remaining' | 'longestResetS'>): string {
  const length = w.windowS ?? (w.longestResetS > 0 ? w.longestResetS : null);
  if (w.limit === null) return `${w.remaining ?? '?'} requests left`;
  if (length === null) return `${w.limit} requests`;
  return `${w.limit} requests per ${length === 1 ? 'second' : spanOf(length)}`;
}

/**
 * The halt of a spent quota (exit 3): "the partner's quota for this key is spent until <time>", what
 * it was, and that nothing more is sent before then (the rows stay `pending`).
 */
export function quotaSpentReason(w: Pick<TrackedWindow, 'limit' | 'windowS' | 'remaining' | 'longestResetS'>, headers: string, until: Date, maxRetryAfterMs: number): string {
  const what = headers === '' ? describeWindow(w) : `${describeWindow(w)}, announced in ${headers}`;
  return `the partner's quota for this key is spent until ${until.toISOString()} (${what}); its reset is over --max-retry-after (${spanOf(Math.round(maxRetryAfterMs / 1000))}) away: nothing more is sent; run again after ${until.toISOString()}`;
}

function spanOf(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400}d`;
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${Math.round(seconds)}s`;
}

/**
 * A request that passed the gate ({@link AnnouncedLimit.reserve}): counted against what is left
 * while it waits to leave, then numbered as it leaves (`depart`), in the order requests reach the
 * partner; `cancel` when it does not leave after all.
 */
export interface SendTicket {
  /** Its number among the requests that left (0 until it leaves). */
  readonly no: number;
  /** Whether it left within a trusted announced rate (paced within it). */
  readonly under: boolean;
  /** When it left (the limiter clock's ms): its answer's resets count from there (the partner counted it on arrival). */
  readonly at: number;
  /** It leaves now; `paced`: the sends are paced within the announced rate (false: nothing paces them, `--no-adaptive`). */
  depart(paced?: boolean): void;
  cancel(): void;
}

/** What changed with an answer, for the client's events. */
export type AnnouncedChange =
  | { type: 'announced'; headers: string; windows: TrackedWindow[] }
  /** `throttled` 429s among the last `answers` answers to requests sent within it. */
  | { type: 'distrusted'; throttled: number; answers: number; headers: string; windows: TrackedWindow[] };

/** What a run records and says of the announced limit (`runs.announced_json`, the summary, `report`). */
export interface AnnouncedSummary {
  style: AnnouncementStyle;
  /** The headers it was read from. */
  headers: string;
  /** The windows last announced (at most a few): name, limit, length in seconds. */
  windows: { name: string | null; limit: number | null; window_s: number | null }[];
  /** The highest rate they allowed (requests/s), or null when none said a rate (quotas only). */
  rate: number | null;
  /** Milliseconds from the first announcement to when it was distrusted; null while trusted. */
  distrusted_after_ms: number | null;
  /** 429s to requests sent within it, and the answers to such requests. */
  throttled_under: number;
  answers_under: number;
  /** When a spent quota stopped the run (ISO time of its reset), or null. */
  spent_until: string | null;
}

const MAX_WINDOWS = 8;

/**
 * The announced limit of one partner client. `now()` is the limiter's monotonic clock; the client
 * counts each request as it leaves ({@link sent}) and passes each answer back ({@link answered}).
 */
export class AnnouncedLimit {
  readonly #now: () => number;
  readonly #maxRetryAfterMs: number;
  readonly #windows = new Map<string, TrackedWindow>();
  /** Requests that left, and requests that passed the gate and have not left yet. */
  #sends = 0;
  #reserved = 0;
  #style: AnnouncementStyle | null = null;
  #headers = '';
  #firstAt: number | null = null;
  #distrustedAt: number | null = null;
  #throttledUnder = 0;
  #answersUnder = 0;
  /** The last answers to requests sent within it, 1 for a 429, and how many of them were. */
  readonly #recent = new Uint8Array(ANNOUNCED.distrustAnswers);
  #recentThrottled = 0;
  #highestRate: number | null = null;
  #spentUntil: Date | null = null;

  constructor(options: { maxRetryAfterMs: number; now?: () => number }) {
    this.#now = options.now ?? (() => performance.now());
    this.#maxRetryAfterMs = options.maxRetryAfterMs;
  }

  /** True once the partner announced a limit it did not keep to: nothing announced counts any more. */
  get distrusted(): boolean {
    return this.#distrustedAt !== null;
  }

  /**
   * Counts a request that passed the gate: it counts against what is left at once (others waiting
   * see the quota spent), and is numbered when it leaves. Numbering at departure rather than here
   * keeps the count right when requests leave in another order than they passed the gate (each
   * awaits its ledger mark first): an answer's remaining count covers the requests that reached
   * the partner before it, which are those that left before it.
   */
  reserve(): SendTicket {
    this.#reserved += 1;
    let state: 'reserved' | 'left' | 'cancelled' = 'reserved';
    const ticket = {
      no: 0, under: false, at: 0,
      depart: (paced = true) => {
        if (state !== 'reserved') return;
        state = 'left';
        this.#reserved -= 1;
        this.#sends += 1;
        // 429s to requests nothing held to the announced rate say nothing of whether the partner keeps to it.
        Object.assign(ticket, { no: this.#sends, under: paced && this.#trusted() && this.ceiling() !== null, at: this.#now() });
      },
      cancel: () => {
        if (state !== 'reserved') return;
        state = 'cancelled';
        this.#reserved -= 1;
      },
    };
    return ticket;
  }

  /** A request leaving at once (passed the gate and left): {@link reserve} then `depart`. */
  sent(): SendTicket {
    const ticket = this.reserve();
    ticket.depart();
    return ticket;
  }

  /** An answer to the request of `ticket`: what it announced (null: nothing), and whether it was a 429. */
  answered(ticket: SendTicket, announcement: Announcement | null, throttled: boolean): AnnouncedChange[] {
    const changes: AnnouncedChange[] = [];
    if (this.#trusted() && ticket.under) {
      const at = this.#answersUnder % ANNOUNCED.distrustAnswers;
      this.#recentThrottled += (throttled ? 1 : 0) - (this.#recent[at] as number);
      this.#recent[at] = throttled ? 1 : 0;
      this.#answersUnder += 1;
      if (throttled) this.#throttledUnder += 1;
      if (this.#recentThrottled >= ANNOUNCED.distrustThrottled) {
        this.#distrustedAt = this.#now();
        changes.push({ type: 'distrusted', throttled: this.#recentThrottled, answers: Math.min(this.#answersUnder, ANNOUNCED.distrustAnswers), headers: this.#headers, windows: this.windows() });
      }
    }
    if (announcement === null) return changes;
    const first = this.#style === null;
    this.#style = announcement.style;
    this.#headers = announcement.headers;
    this.#firstAt ??= this.#now();
    for (const a of announcement.windows) {
      const key = a.name ?? (a.windowS !== null ? `${a.windowS}s` : 'default');
      const known = this.#windows.get(key);
      if (known === undefined && this.#windows.size >= MAX_WINDOWS) continue;
      // What this answer leaves unsaid (Kong gives the reset of one window only) stands while its window does.
      const standing = known !== undefined && (known.resetAt === null || known.resetAt > ticket.at) ? known : undefined;
      const resetAt = a.resetS === null ? standing?.resetAt ?? null : ticket.at + a.resetS * 1000;
      const sameWindow = standing !== undefined && (standing.resetAt === null || resetAt === null || resetAt <= standing.resetAt + SAME_WINDOW_MS);
      const bases = [...(sameWindow ? standing.bases : []), ...(a.remaining === null ? [] : [a.remaining + ticket.no])].slice(-BASES);
      // An answer to an earlier request than the one that last spoke of this window adds what it says is left, no more.
      if (known !== undefined && known.sendNo > ticket.no) {
        if (sameWindow) this.#windows.set(key, { ...known, bases });
        continue;
      }
      this.#windows.set(key, {
        key, name: a.name, limit: a.limit ?? known?.limit ?? null, windowS: a.windowS ?? known?.windowS ?? null,
        longestResetS: Math.max(known?.longestResetS ?? 0, a.resetS ?? 0),
        ...(a.remaining !== null || standing === undefined
          ? { remaining: a.remaining, sendNo: ticket.no }
          : { remaining: standing.remaining, sendNo: standing.sendNo }),
        bases,
        resetAt,
        resetTimed: a.resetS === null ? standing?.resetTimed ?? false : a.resetS >= ANNOUNCED.timedResetS,
      });
    }
    const rate = this.ceiling();
    if (rate !== null) this.#highestRate = Math.max(this.#highestRate ?? 0, rate);
    if (first) changes.push({ type: 'announced', headers: announcement.headers, windows: this.windows() });
    return changes;
  }

  /** The rate sends stay within now (requests/s), or null: none announced, or distrusted. */
  ceiling(): number | null {
    return this.#trusted() ? ceilingOf(this.#windows.values(), this.#now(), this.#sends + this.#reserved, this.#maxRetryAfterMs) : null;
  }

  /** Whether a request may leave now (see {@link gateOf}); always while distrusted. */
  gate(): Gate {
    return this.#trusted() ? gateOf(this.#windows.values(), this.#now(), this.#sends, this.#maxRetryAfterMs, this.#reserved) : { kind: 'send' };
  }

  /** Notes that a spent quota stopped the run, until `until`. */
  spent(until: Date): void {
    this.#spentUntil = until;
  }

  windows(): TrackedWindow[] {
    return [...this.#windows.values()];
  }

  /** What the run records of it; null when the partner announced nothing. */
  summary(): AnnouncedSummary | null {
    if (this.#style === null) return null;
    return {
      style: this.#style,
      headers: this.#headers,
      windows: this.windows().slice(0, 4).map((w) => ({ name: w.name, limit: w.limit, window_s: lengthOf(w) })),
      rate: this.#highestRate === null ? null : Math.round(this.#highestRate * 100) / 100,
      distrusted_after_ms: this.#distrustedAt === null || this.#firstAt === null ? null : Math.round(this.#distrustedAt - this.#firstAt),
      throttled_under: this.#throttledUnder,
      answers_under: this.#answersUnder,
      spent_until: this.#spentUntil?.toISOString() ?? null,
    };
  }

  #trusted(): boolean {
    return this.#distrustedAt === null && this.#style !== null;
  }
}
