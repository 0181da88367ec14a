/**
 * Durations as the contract writes them (`90s`, `15m`, `2h`, `30d`; a bare number is seconds), read
 * from flags and the config file, and written back the same way in messages.
 */

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration as the contract writes them: `90s`, `15m`, `2h`, `30d`, `500ms`, or a bare
 * number of seconds. Returns milliseconds; `undefined` when the text is not a duration.
 */
export function parseDuration(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(text);
  if (m === null) return undefined;
  const ms = Number(m[1]) * (DURATION_UNITS[(m[2] ?? 's').toLowerCase()] ?? 1000);
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

/** `45s`, `12m`, `1h30m`, `10h` — for messages about waiting. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m}m` : `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  return m % 60 === 0 ? `${h}h` : `${h}h${String(m % 60).padStart(2, '0')}m`;
}
