/**
 * Small inline-SVG charts for the HTML report: no script, no font, no fetch. Every drawn data
 * mark has class `mark` (tests count them); every text is escaped.
 */
import type { HistogramBin } from './types.js';

const W = 560;
const H = 240;
const M = { top: 14, right: 14, bottom: 34, left: 56 };
const PLOT_W = W - M.left - M.right;
const PLOT_H = H - M.top - M.bottom;

export function escapeHtml(value: unknown): string {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** 1234 → "1.2k", 0.5 → "0.5": axis labels stay short. */
export function formatCompact(n: number): string {
  const abs = Math.abs(n);
  if (abs >= 1e6) return `${trim(n / 1e6)}M`;
  if (abs >= 1e4) return `${trim(n / 1e3)}k`;
  if (abs >= 100 || Number.isInteger(n)) return String(Math.round(n));
  return trim(n);
}

const trim = (n: number): string => String(Number(n.toFixed(1)));
const fx = (n: number): string => n.toFixed(1);

function frame(chart: string, title: string, body: string): string {
  const id = `chart-${chart}`;
  return `<svg class="chart" data-chart="${escapeHtml(chart)}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-title" preserveAspectRatio="xMidYMid meet">`
    + `<title id="${id}-title">${escapeHtml(title)}</title>${body}</svg>`;
}

function emptyChart(chart: string, title: string, message: string): string {
  return frame(chart, title, `<text class="empty" x="${W / 2}" y="${H / 2}" text-anchor="middle">${escapeHtml(message)}</text>`);
}

/** Y axis with 0, half and max gridlines. */
function yAxis(max: number): string {
  let out = '';
  for (const f of [0, 0.5, 1]) {
    const y = M.top + PLOT_H * (1 - f);
    out += `<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${fx(y)}" y2="${fx(y)}"/>`;
    out += `<text class="axis" x="${M.left - 6}" y="${fx(y + 4)}" text-anchor="end">${escapeHtml(formatCompact(max * f))}</text>`;
  }
  return out;
}

function xLabel(x: number, text: string, anchor: 'start' | 'middle' | 'end'): string {
  return `<text class="axis" x="${fx(x)}" y="${H - M.bottom + 16}" text-anchor="${anchor}">${escapeHtml(text)}</text>`;
}

/** Horizontal bars, one per category (zero bars are listed but not drawn). */
export function renderBarChart(
  chart: string,
  title: string,
  items: readonly { label: string; value: number; color: string }[],
): string {
  const max = Math.max(0, ...items.map((i) => i.value));
  if (max === 0) return emptyChart(chart, title, 'no rows recorded');
  const left = 110;
  const right = 64;
  const rowH = (H - 16) / items.length;
  const barH = Math.max(4, rowH * 0.7);
  let body = '';
  items.forEach((item, i) => {
    const y = 8 + i * rowH;
    const w = ((W - left - right) * item.value) / max;
    body += `<text class="label" x="${left - 8}" y="${fx(y + barH / 2 + 4)}" text-anchor="end">${escapeHtml(item.label)}</text>`;
    if (item.value > 0) {
      body += `<rect class="mark" x="${left}" y="${fx(y)}" width="${fx(Math.max(1, w))}" height="${fx(barH)}" rx="2" fill="${item.color}"><title>${escapeHtml(`${item.label}: ${item.value}`)}</title></rect>`;
    }
    body += `<text class="value" x="${fx(left + Math.max(1, w) + 6)}" y="${fx(y + barH / 2 + 4)}">${escapeHtml(item.value.toLocaleString('en-US'))}</text>`;
  });
  return frame(chart, title, body);
}

/** Vertical bars per histogram bin, x labels at the edges and the middle. */
export function renderHistogram(chart: string, title: string, bins: readonly HistogramBin[], unit: string, color: string): string {
  if (bins.length === 0) return emptyChart(chart, title, 'no data');
  const max = Math.max(...bins.map((b) => b.count));
  const bw = PLOT_W / bins.length;
  let body = yAxis(max);
  bins.forEach((bin, i) => {
    const h = max === 0 ? 0 : (PLOT_H * bin.count) / max;
    if (bin.count === 0) return;
    body += `<rect class="mark" x="${fx(M.left + i * bw + 1)}" y="${fx(M.top + PLOT_H - h)}" width="${fx(Math.max(1, bw - 2))}" height="${fx(Math.max(1, h))}" fill="${color}">`
      + `<title>${escapeHtml(`${formatCompact(bin.from)}–${formatCompact(bin.to)} ${unit}: ${bin.count}`)}</title></rect>`;
  });
  const first = bins[0] as HistogramBin;
  const last = bins[bins.length - 1] as HistogramBin;
  const mid = bins[Math.floor(bins.length / 2)] as HistogramBin;
  body += xLabel(M.left, formatCompact(first.from), 'start');
  if (bins.length > 2) body += xLabel(M.left + Math.floor(bins.length / 2) * bw, formatCompact(mid.from), 'middle');
  const overflow = bins.length > 1 && last.to - last.from > 1.5 * ((bins[0] as HistogramBin).to - first.from);
  body += xLabel(W - M.right, overflow ? `≥${formatCompact(last.from)} (max ${formatCompact(last.to)}) ${unit}` : `${formatCompact(last.to)} ${unit}`, 'end');
  return frame(chart, title, body);
}

/** Rows completed per bucket (bars) and in total so far (line, right-hand scale shown as %). */
export function renderTimeline(chart: string, title: string, start: string | null, bucketSeconds: number, buckets: readonly number[]): string {
  if (start === null || buckets.length === 0) return emptyChart(chart, title, 'no rows completed yet');
  const max = Math.max(...buckets);
  const total = buckets.reduce((a, b) => a + b, 0);
  const bw = PLOT_W / buckets.length;
  let body = yAxis(max);
  let cumulative = 0;
  const points: string[] = [];
  buckets.forEach((n, i) => {
    const h = max === 0 ? 0 : (PLOT_H * n) / max;
    if (n > 0) {
      body += `<rect class="mark" x="${fx(M.left + i * bw + 0.5)}" y="${fx(M.top + PLOT_H - h)}" width="${fx(Math.max(1, bw - 1))}" height="${fx(Math.max(1, h))}" fill="#4c78a8">`
        + `<title>${escapeHtml(`${clock(start, i * bucketSeconds)}: ${n} rows`)}</title></rect>`;
    }
    cumulative += n;
    points.push(`${fx(M.left + (i + 1) * bw)},${fx(M.top + PLOT_H * (1 - cumulative / total))}`);
  });
  body += `<path class="mark cumulative" d="M${M.left},${M.top + PLOT_H} L${points.join(' L')}" fill="none" stroke="#f58518" stroke-width="2"/>`;
  body += xLabel(M.left, clock(start, 0), 'start');
  body += xLabel(W - M.right, `${clock(start, buckets.length * bucketSeconds)} UTC`, 'end');
  return frame(chart, title, body);
}

/** `start` + `offsetSeconds` as HH:MM:SS UTC. */
function clock(start: string, offsetSeconds: number): string {
  return new Date(Date.parse(start) + offsetSeconds * 1000).toISOString().slice(11, 19);
}
