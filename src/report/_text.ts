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
 * A concurrency limit (requests allowed in flight) as the run's summary writes it: to one decimal,
 * a whole number without one ("4.5", "8"). A window cut by 0.9 or halved is often fractional, and
 * "settled at 5" in the report beside "4.5 requests allowed" in the summary read as two limits.
 */
export function formatLimit(n: number | null): string {
  return n === null ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: 1 });
}

import { formatDuration } from '../duration.js';

export { formatDuration };

/** Seconds (as the report's JSON keeps them) as a {@link formatDuration}. */
export const formatSeconds = (seconds: number | null): string => formatDuration(seconds === null ? null : seconds * 1000);

/** ISO timestamp as `2024-05-01 10:00:00Z` (19 + 1 characters) for narrow columns. */
export function formatTimestamp(iso: string | null): string {
  if (iso === null) return '–';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return cleanText(iso);
  return `${new Date(t).toISOString().slice(0, 19).replace('T', ' ')}Z`;
}
