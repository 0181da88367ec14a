/**
 * The sandbox's gateway telling the caller its limit (`--announce-limit`), in the three styles of
 * docs/sandbox.md: Kong's rate-limiting plugin, the IETF draft's structured fields, and Envoy's
 * `X-RateLimit-*` (draft 03, as its rate-limit filter sends them). Pure: the windows in, the headers
 * out; the server decides the windows' figures when a request arrives, as a gateway does.
 */

export const ANNOUNCE_STYLES = ['none', 'kong', 'ietf', 'x-ratelimit'] as const;
export type AnnounceStyle = (typeof ANNOUNCE_STYLES)[number];

/** One limit as the gateway announces it for this request: already counting it. */
export interface GatewayWindow {
  /** The policy's name (IETF, Envoy): `rate`, `quota`. */
  name: string;
  limit: number;
  windowS: number;
  remaining: number;
  /** Seconds until the window resets, whole, at least 1 (Kong and the draft speak in whole seconds). */
  resetS: number;
}

/** Kong's periods: a window Kong can announce has one of these lengths. */
const KONG_PERIODS: ReadonlyMap<number, string> = new Map([
  [1, 'Second'], [60, 'Minute'], [3600, 'Hour'], [86_400, 'Day'], [2_592_000, 'Month'], [31_536_000, 'Year'],
]);

/** Why `windowS` cannot be announced in `style` (Kong has fixed periods), or null. */
export function unannounceable(style: AnnounceStyle, windowS: number): string | null {
  if (style !== 'kong' || KONG_PERIODS.has(windowS)) return null;
  return `Kong announces limits per second, minute, hour, day, month or year; a window of ${windowS} s has no header there (use --announce-limit ietf or x-ratelimit)`;
}

/** The window nearest its limit (fewest left, the longer one on a tie): the one Kong's `RateLimit-*` and Envoy's expiring limit describe. */
function nearest(windows: readonly GatewayWindow[]): GatewayWindow {
  return windows.reduce((a, b) => (b.remaining < a.remaining || (b.remaining === a.remaining && b.windowS > a.windowS) ? b : a));
}

/** The headers announcing `windows` in `style`; none for `none` or no window. */
export function announceHeaders(style: AnnounceStyle, windows: readonly GatewayWindow[]): Record<string, string> {
  if (style === 'none' || windows.length === 0) return {};
  const near = nearest(windows);
  switch (style) {
    case 'kong': {
      const headers: Record<string, string> = {};
      for (const w of windows) {
        const period = KONG_PERIODS.get(w.windowS);
        if (period === undefined) continue;
        headers[`x-ratelimit-limit-${period.toLowerCase()}`] = String(w.limit);
        headers[`x-ratelimit-remaining-${period.toLowerCase()}`] = String(w.remaining);
      }
      return { ...headers, 'ratelimit-limit': String(near.limit), 'ratelimit-remaining': String(near.remaining), 'ratelimit-reset': String(near.resetS) };
    }
    case 'ietf':
      return {
        'ratelimit-policy': windows.map((w) => `"${w.name}";q=${w.limit};w=${w.windowS}`).join(', '),
        ratelimit: windows.map((w) => `"${w.name}";r=${w.remaining};t=${w.resetS}`).join(', '),
      };
    case 'x-ratelimit':
      return {
        'x-ratelimit-limit': [String(near.limit), ...windows.map((w) => `${w.limit};w=${w.windowS};name="${w.name}"`)].join(', '),
        'x-ratelimit-remaining': String(near.remaining),
        'x-ratelimit-reset': String(near.resetS),
      };
  }
}

/** Seconds as the headers give them: whole, rounded up, at least 1. */
export function wholeSeconds(seconds: number): number {
  return Math.max(1, Math.ceil(seconds - 1e-9));
}
