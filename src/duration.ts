/**
 * Durations as the README writes them (`90s`, `15m`, `2h`, `30d`; a bare number is seconds), read
 * from flags and the config file, and written back the same way in messages.
 */

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * The longest duration a run waits on as one timer: 24 days, below what a Node timer holds (2³¹−1
 * ms, 24.8 days; a longer one fires at once). `--max-outage 30d` is refused, not taken as 1 ms.
 */
export const MAX_WAIT_MS = 24 * 86_400_000;

/** The longest age `prune --older-than` takes: 100 years (a date so far back is still a date). */
export const MAX_AGE_MS = 36_500 * 86_400_000;

/**
 * Parses a duration as the README writes them: `90s`, `15m`, `2h`, `30d`, `500ms`, or a bare
 * number of seconds. Returns milliseconds; `undefined` when the text is not a duration.
 */
export function parseDuration(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(text);
  if (m === null) return undefined;
  const ms = Number(m[1]) * (DURATION_UNITS[(m[2] ?? 's').toLowerCase()] ?? 1000);
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

/**
 * A duration as people write it: `0.6s`, `45s`, `1m05s`, `2h03m`, `3d04h` (tenths under 10 s).
 * Rounded to the unit shown first, so a field never reaches 60 (`59.6s` is `1m00s`, not `1m60s`).
 * `–` for null or a negative or non-finite value.
 */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '–';
  const pad = (n: number): string => String(n).padStart(2, '0');
  const tenths = Math.round(ms / 100);
  if (tenths < 100) return `${tenths / 10}s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  const m = Math.round(s / 60);
  if (m < 1440) return `${Math.floor(m / 60)}h${pad(m % 60)}m`;
  const h = Math.round(m / 60);
  return `${Math.floor(h / 24)}d${pad(h % 24)}h`;
}
