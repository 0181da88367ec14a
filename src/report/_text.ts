/** Text helpers for terminal tables: ledger data is untrusted, so control characters never reach the terminal. */

/** Replaces control characters (newlines, ESC sequences, C1 codes) with a space. */
export function cleanText(value: string | null | undefined): string {
  // eslint-disable-next-line no-control-regex
  return (value ?? '').replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ');
}

/** Cuts `text` to at most `width` code points, ending with `…` when cut. */
export function truncateText(text: string, width: number): string {
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  if (width <= 1) return chars.slice(0, width).join('');
  return `${chars.slice(0, width - 1).join('')}…`;
}

/** Cuts `text` from the left (keeping the end, e.g. a file name) to at most `width` code points. */
export function truncateStart(text: string, width: number): string {
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  return `…${chars.slice(chars.length - width + 1).join('')}`;
}

/** Left-aligned cell of exactly `width` code points. */
export function padCell(text: string, width: number): string {
  const cut = truncateText(text, width);
  return cut + ' '.repeat(Math.max(0, width - Array.from(cut).length));
}

/** Right-aligned cell of exactly `width` code points. */
export function padCellLeft(text: string, width: number): string {
  const cut = truncateText(text, width);
  return ' '.repeat(Math.max(0, width - Array.from(cut).length)) + cut;
}

export function formatInteger(n: number): string {
  return n.toLocaleString('en-US');
}

export function formatPercent(rate: number | null): string {
  return rate === null ? '–' : `${(rate * 100).toFixed(1)}%`;
}

/** A figure that may be missing, with a fixed number of decimals. */
export function formatFixed(n: number | null, decimals: number): string {
  return n === null ? '–' : n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
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

/** Seconds (as the report's JSON keeps them) as a {@link formatDuration}. */
export const formatSeconds = (seconds: number | null): string => formatDuration(seconds === null ? null : seconds * 1000);

/** ISO timestamp as `2024-05-01 10:00:00Z` (19 + 1 characters) for narrow columns. */
export function formatTimestamp(iso: string | null): string {
  if (iso === null) return '–';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return cleanText(iso);
  return `${new Date(t).toISOString().slice(0, 19).replace('T', ' ')}Z`;
}
