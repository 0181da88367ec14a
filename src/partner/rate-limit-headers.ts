/**
 * What a partner's gateway announces of our limit, read from one answer's headers
 * (docs/announced-limits.md). Pure: the headers in, the announced windows out; a header
 * that is unknown, malformed or out of bounds is ignored, never an error (the IETF draft: "Malformed
 * RateLimit header fields MUST be ignored").
 *
 * The forms read, first found wins:
 *
 * | style | headers | as sent by |
 * |---|---|---|
 * | `ietf` | `RateLimit-Policy: "default";q=100;w=60`, `RateLimit: "default";r=42;t=17` | draft-ietf-httpapi-ratelimit-headers 08 and later, express-rate-limit's draft-8 |
 * | `ietf-07` | `RateLimit: limit=100, remaining=50, reset=5`, `RateLimit-Policy: 100;w=60` | draft 07, express-rate-limit's draft-7 |
 * | `kong` | `X-RateLimit-Limit-Second: 40`, `X-RateLimit-Remaining-Second: 12` (… `-Minute`, `-Hour`, `-Day`, `-Month`, `-Year`), with `RateLimit-Reset` for the window nearest its end | Kong's rate-limiting plugins |
 * | `ratelimit-limit` | `RateLimit-Limit: 100` or `100, 100;w=60`, `RateLimit-Remaining`, `RateLimit-Reset`, `RateLimit-Policy: 100;w=60` | drafts up to 06, Kong, GitLab |
 * | `x-ratelimit` | `X-RateLimit-Limit: 10, 10;w=60;name="minute"`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (`X-Rate-Limit-…` too) | Envoy's rate-limit filter, GitHub, Twitter, Discord, express-rate-limit's legacy headers |
 *
 * A reset is read as seconds from now, unless it can only be a time: 10⁹ and more is a Unix time in
 * seconds (2001 on), 10¹¹ and more in milliseconds.
 */
import { parseDictionary, parseList, Token, type BareItem, type InnerList, type Item } from 'structured-headers';

/** One quota the partner announced: its limit over its window, and where the current window stands. */
export interface AnnouncedWindow {
  /** The policy's name when the partner gives one (`"default"`, Envoy's `name`, Kong's period). */
  name: string | null;
  /** Requests allowed in a window; null when only the remaining count is said. */
  limit: number | null;
  /** The window's length in seconds; null when not said. */
  windowS: number | null;
  /** Requests left in the current window, as of the answer; null when not said. */
  remaining: number | null;
  /** Seconds from the answer until more quota is made available; null when not said. */
  resetS: number | null;
}

export type AnnouncementStyle = 'ietf' | 'ietf-07' | 'kong' | 'ratelimit-limit' | 'x-ratelimit';

export interface Announcement {
  style: AnnouncementStyle;
  /** The headers it was read from, as messages name them. */
  headers: string;
  windows: AnnouncedWindow[];
}

/** Headers the HTTP thread passes on with an answer: these families only. */
export const RATE_LIMIT_HEADER = /^(?:x-)?rate-?limit(?:-|$)/;

/** Bounds past which a value is a broken or hostile gateway's, not a limit to act on (the draft's "Denial of Service"). */
const MAX_COUNT = 1e9;
const MAX_WINDOW_S = 366 * 86_400;
const EPOCH_SECONDS_FROM = 1e9;
const EPOCH_MS_FROM = 1e11;

/** Kong's periods (its `EXPIRATION` table). */
const KONG_PERIODS: ReadonlyMap<string, number> = new Map([
  ['second', 1], ['minute', 60], ['hour', 3600], ['day', 86_400], ['month', 2_592_000], ['year', 31_536_000],
]);

type Headers = Readonly<Record<string, string | undefined>>;

/**
 * The limit announced in `headers` (lower-case names, as Node gives them), or null when none is.
 * `nowMs` (the wall clock) turns a reset given as a Unix time into seconds from now.
 */
export function parseRateLimitHeaders(headers: Headers, nowMs: number): Announcement | null {
  for (const read of [readIetf, readIetf07, readKong, readLimitFamily('ratelimit'), readLimitFamily('x-ratelimit'), readLimitFamily('x-rate-limit')]) {
    const found = read(headers, nowMs);
    if (found !== null && found.windows.length > 0) return found;
  }
  return null;
}

/** `RateLimit-Policy` and `RateLimit` as lists of named items (draft 08 on). */
function readIetf(headers: Headers, nowMs: number): Announcement | null {
  const policies = new Map<string, { limit: number; windowS: number | null }>();
  for (const [value, params] of listItems(headers['ratelimit-policy'])) {
    const name = nameOf(value);
    const limit = count(params.get('q'));
    const unit = params.get('qu');
    // A quota of bytes or of concurrent requests is not a request rate.
    if (name === null || limit === null || (unit !== undefined && nameOf(unit) !== 'requests')) continue;
    const w = params.get('w');
    const windowS = w === undefined ? null : windowOf(w);
    // A window that is no window (0, a fraction) makes the whole policy malformed.
    if (policies.has(name) || (w !== undefined && windowS === null)) continue;
    policies.set(name, { limit, windowS });
  }
  const windows: AnnouncedWindow[] = [];
  const seen = new Set<string>();
  for (const [value, params] of listItems(headers.ratelimit)) {
    const name = nameOf(value);
    const remaining = count(params.get('r'));
    if (name === null || remaining === null || seen.has(name)) continue;
    seen.add(name);
    const policy = policies.get(name);
    const t = params.get('t');
    windows.push({ name, limit: policy?.limit ?? null, windowS: policy?.windowS ?? null, remaining: capped(remaining, policy?.limit), resetS: t === undefined ? null : resetOf(t, nowMs) });
  }
  for (const [name, policy] of policies) {
    if (!seen.has(name)) windows.push({ name, ...policy, remaining: null, resetS: null });
  }
  return { style: 'ietf', headers: 'RateLimit-Policy / RateLimit (IETF draft)', windows };
}

/** `RateLimit: limit=100, remaining=50, reset=5` with `RateLimit-Policy: 100;w=60` (draft 07). */
function readIetf07(headers: Headers, nowMs: number): Announcement | null {
  const text = headers.ratelimit;
  if (text === undefined) return null;
  let fields: Map<string, Item | InnerList>;
  try {
    fields = parseDictionary(text);
  } catch {
    return null;
  }
  const limit = count(itemValue(fields.get('limit')));
  if (limit === null) return null;
  const remaining = count(itemValue(fields.get('remaining')));
  const reset = itemValue(fields.get('reset'));
  const policies = integerPolicies(listItems(headers['ratelimit-policy']));
  return {
    style: 'ietf-07', headers: 'RateLimit (IETF draft 07)',
    windows: expiringWithPolicies({ limit, remaining: capped(remaining, limit), resetS: reset === undefined ? null : resetOf(reset, nowMs) }, policies),
  };
}

/** Kong: a limit and a remaining count per period, and `RateLimit-*` for the one nearest its end. */
function readKong(headers: Headers, nowMs: number): Announcement | null {
  const windows: AnnouncedWindow[] = [];
  for (const [period, windowS] of KONG_PERIODS) {
    const limit = count(plainNumber(headers[`x-ratelimit-limit-${period}`]));
    if (limit === null) continue;
    windows.push({ name: period, limit, windowS, remaining: capped(count(plainNumber(headers[`x-ratelimit-remaining-${period}`])), limit), resetS: null });
  }
  if (windows.length === 0) return null;
  // Kong's RateLimit-* describe the window with the fewest left (the longer one on a tie): its reset is that window's.
  const limit = count(plainNumber(headers['ratelimit-limit']));
  const remaining = count(plainNumber(headers['ratelimit-remaining']));
  const reset = plainNumber(headers['ratelimit-reset']);
  const match = windows.filter((w) => w.limit === limit && w.remaining === remaining).at(-1);
  if (match !== undefined && reset !== null) match.resetS = resetOf(reset, nowMs);
  return { style: 'kong', headers: `X-RateLimit-Limit-${windows.map((w) => capitalised(w.name as string)).join('/-')} (Kong)`, windows };
}

/**
 * `<prefix>-Limit`, `-Remaining`, `-Reset`: the limit either a number or, as the older drafts and
 * Envoy send it, the expiring limit followed by its policies (`10, 10;w=60;name="minute"`).
 */
function readLimitFamily(prefix: 'ratelimit' | 'x-ratelimit' | 'x-rate-limit'): (headers: Headers, nowMs: number) => Announcement | null {
  const shown = { ratelimit: 'RateLimit', 'x-ratelimit': 'X-RateLimit', 'x-rate-limit': 'X-Rate-Limit' }[prefix];
  return (headers, nowMs) => {
    const text = headers[`${prefix}-limit`];
    if (text === undefined) return null;
    const items = listItems(text);
    const first = items[0];
    const limit = count(first === undefined ? plainNumber(text) : first[0]);
    if (limit === null) return null;
    const remaining = count(plainNumber(headers[`${prefix}-remaining`]));
    const reset = plainNumber(headers[`${prefix}-reset`]) ?? plainNumber(headers[`${prefix}-reset-after`]);
    const policies = integerPolicies([...items, ...(prefix === 'ratelimit' ? listItems(headers['ratelimit-policy']) : [])]);
    return {
      style: prefix === 'ratelimit' ? 'ratelimit-limit' : 'x-ratelimit', headers: `${shown}-Limit / -Remaining / -Reset`,
      windows: expiringWithPolicies({ limit, remaining: capped(remaining, limit), resetS: reset === null ? null : resetOf(reset, nowMs) }, policies),
    };
  };
}

/** Policies given as `100;w=60;name="minute"`: integers with a window. */
function integerPolicies(items: readonly Item[]): { name: string | null; limit: number; windowS: number }[] {
  const out: { name: string | null; limit: number; windowS: number }[] = [];
  for (const [value, params] of items) {
    const limit = count(value);
    const w = params.get('w');
    const windowS = w === undefined ? null : windowOf(w);
    if (limit === null || windowS === null) continue;
    const name = params.get('name');
    out.push({ name: name === undefined ? null : nameOf(name), limit, windowS });
  }
  return out;
}

/** The expiring limit in the window of the first policy with its quota, then the other policies. */
function expiringWithPolicies(
  expiring: { limit: number; remaining: number | null; resetS: number | null },
  policies: readonly { name: string | null; limit: number; windowS: number }[],
): AnnouncedWindow[] {
  const own = policies.find((p) => p.limit === expiring.limit);
  return [
    { name: own?.name ?? null, windowS: own?.windowS ?? null, ...expiring },
    ...policies.filter((p) => p !== own).map((p) => ({ ...p, remaining: null, resetS: null })),
  ];
}

/** The members of a structured-field list that are items (not inner lists); none when the field is absent or malformed. */
function listItems(text: string | undefined): Item[] {
  if (text === undefined) return [];
  try {
    return parseList(text).filter((member): member is Item => !Array.isArray(member[0]));
  } catch {
    return [];
  }
}

function itemValue(member: Item | InnerList | undefined): BareItem | undefined {
  return member === undefined || Array.isArray(member[0]) ? undefined : (member as Item)[0];
}

/** A policy's name: a string or a token, printable and short. */
function nameOf(value: BareItem): string | null {
  const text = typeof value === 'string' ? value : value instanceof Token ? value.toString() : null;
  return text !== null && text !== '' && text.length <= 64 && /^[\x20-\x7e]+$/.test(text) ? text : null;
}

/** A count of requests: a whole number from 0 to 10⁹. */
function count(value: BareItem | number | null | undefined): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_COUNT ? value : null;
}

/** A window: whole seconds, at least 1, at most a year. */
function windowOf(value: BareItem): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_WINDOW_S ? value : null;
}

/** Seconds from now until a reset given as seconds, or as a Unix time (seconds or milliseconds); null past a year or not a number. */
function resetOf(value: BareItem | number, nowMs: number): number | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null;
  const seconds = value >= EPOCH_MS_FROM ? (value - nowMs) / 1000 : value >= EPOCH_SECONDS_FROM ? value - nowMs / 1000 : value;
  if (seconds > MAX_WINDOW_S) return null;
  return Math.max(0, seconds);
}

/** A header holding one non-negative number (`5000`, `1470173023.123`); null otherwise. */
function plainNumber(text: string | undefined): number | null {
  if (text === undefined) return null;
  const match = /^\s*(\d{1,16}(?:\.\d{1,6})?)\s*$/.exec(text);
  return match === null ? null : Number(match[1]);
}

/** A remaining count above the limit is the limit (the partner cannot allow more than its quota). */
function capped(remaining: number | null, limit: number | null | undefined): number | null {
  return remaining === null || limit === null || limit === undefined ? remaining : Math.min(remaining, limit);
}

function capitalised(word: string): string {
  return `${word.charAt(0).toUpperCase()}${word.slice(1)}`;
}
