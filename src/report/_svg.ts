/**
 * Small inline-SVG charts for the HTML report: no script, no font, no fetch. Every drawn data
 * mark has class `mark` (tests count them), every axis a title (`axis-title`, with `data-axis`
 * x, y or y2); every text is escaped. Counts get integer ticks; a second series with another
 * unit gets its own scale on the right.
 */
import type { HistogramBin } from './types.js';
import { niceStep, tidy } from './_nice.js';

export const W = 560;
export const H = 250;
/** Plot margins: tick labels and the axis title fit in the left, bottom (and right, for a second scale). */
export const M = { top: 18, bottom: 44, left: 64, right: 16, rightScale: 64 } as const;
export const PLOT_H = H - M.top - M.bottom;

export function escapeHtml(value: unknown): string {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** 1234 → "1,234", 12345 → "12.3k", 2500000 → "2.5M", 0.25 → "0.25": axis labels stay short. */
export function formatCompact(n: number): string {
  const abs = Math.abs(n);
  if (abs >= 1e6) return `${trim(n / 1e6, 1)}M`;
  if (abs >= 1e4) return `${trim(n / 1e3, 1)}k`;
  if (abs >= 100 || Number.isInteger(n)) return Math.round(n).toLocaleString('en-US');
  return trim(n, 2);
}

/** A premium in US dollars, as the partner quotes them: "$1,234" on axes. */
export const formatUsd = (n: number): string => `$${formatCompact(n)}`;

const trim = (n: number, decimals: number): string => String(Number(n.toFixed(decimals)));
export const fx = (n: number): string => n.toFixed(1);

/** An evenly spaced scale from 0: about `count` steps of 1, 2, 2.5 or 5 × 10^k (whole steps for counts). */
export interface Scale {
  top: number;
  ticks: number[];
}

export function niceScale(max: number, options: { integer?: boolean; count?: number } = {}): Scale {
  const integer = options.integer === true;
  const count = options.count ?? 4;
  if (!(max > 0)) return { top: 1, ticks: [0, 1] };
  const step = integer ? Math.max(1, Math.ceil(niceStep(max / count, true))) : niceStep(max / count);
  const top = Math.ceil(max / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(tidy(v));
  return { top, ticks };
}

export function frame(chart: string, title: string, body: string): string {
  const id = `chart-${chart}`;
  return `<svg class="chart" data-chart="${escapeHtml(chart)}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-title" preserveAspectRatio="xMidYMid meet">`
    + `<title id="${id}-title">${escapeHtml(title)}</title>${body}</svg>`;
}

export function emptyChart(chart: string, title: string, message: string): string {
  return frame(chart, title, `<text class="empty" x="${W / 2}" y="${H / 2}" text-anchor="middle">${escapeHtml(message)}</text>`);
}

/** A vertical scale with its tick labels and title: gridlines for the left one, ticks only for the right. */
export function yAxis(scale: Scale, side: 'left' | 'right', title: string, format: (n: number) => string = formatCompact): string {
  const right = side === 'right';
  const edge = right ? W - M.rightScale : M.left;
  let out = '';
  for (const v of scale.ticks) {
    const y = M.top + PLOT_H * (1 - v / scale.top);
    if (!right) out += `<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${fx(y)}" y2="${fx(y)}"/>`;
    else out += `<line class="tick" x1="${edge}" x2="${edge + 4}" y1="${fx(y)}" y2="${fx(y)}"/>`;
    out += `<text class="axis ${right ? 'y2-tick' : 'y-tick'}" x="${right ? edge + 7 : edge - 6}" y="${fx(y + 4)}" text-anchor="${right ? 'start' : 'end'}">${escapeHtml(format(v))}</text>`;
  }
  const x = right ? W - 10 : 14;
  out += `<text class="axis-title" data-axis="${right ? 'y2' : 'y'}" transform="translate(${x},${fx(M.top + PLOT_H / 2)}) rotate(${right ? 90 : -90})" text-anchor="middle">${escapeHtml(title)}</text>`;
  return out;
}

/** The x axis line and its title, centred under the plot. */
export function xAxis(title: string, right: number = M.right): string {
  const y = M.top + PLOT_H;
  return `<line class="axis-line" x1="${M.left}" x2="${W - right}" y1="${y}" y2="${y}"/>`
    + `<text class="axis-title" data-axis="x" x="${fx((M.left + W - right) / 2)}" y="${H - 6}" text-anchor="middle">${escapeHtml(title)}</text>`;
}

export function xLabel(x: number, text: string, anchor: 'start' | 'middle' | 'end' = 'middle'): string {
  const y = M.top + PLOT_H;
  return `<line class="tick" x1="${fx(x)}" x2="${fx(x)}" y1="${y}" y2="${y + 4}"/>`
    + `<text class="axis x-tick" x="${fx(x)}" y="${y + 16}" text-anchor="${anchor}">${escapeHtml(text)}</text>`;
}

/** Horizontal bars, one per category (zero bars are listed but not drawn), on a count scale. */
export function renderBarChart(
  chart: string,
  title: string,
  items: readonly { label: string; value: number; color: string }[],
  axisTitles: { x: string; y: string },
): string {
  const max = Math.max(0, ...items.map((i) => i.value));
  if (max === 0) return emptyChart(chart, title, 'no rows recorded');
  const left = 118;
  const right = W - 70;
  const scale = niceScale(max, { integer: true });
  const rowH = PLOT_H / items.length;
  const barH = Math.max(4, rowH * 0.7);
  const xOf = (v: number): number => left + ((right - left) * v) / scale.top;
  let body = '';
  for (const v of scale.ticks) {
    body += `<line class="grid" x1="${fx(xOf(v))}" x2="${fx(xOf(v))}" y1="${M.top}" y2="${M.top + PLOT_H}"/>`
      + `<text class="axis x-tick" x="${fx(xOf(v))}" y="${M.top + PLOT_H + 16}" text-anchor="middle">${escapeHtml(formatCompact(v))}</text>`;
  }
  items.forEach((item, i) => {
    const y = M.top + i * rowH + (rowH - barH) / 2;
    const w = xOf(item.value) - left;
    body += `<text class="label" x="${left - 8}" y="${fx(y + barH / 2 + 4)}" text-anchor="end">${escapeHtml(item.label)}</text>`;
    if (item.value > 0) {
      body += `<rect class="mark" x="${left}" y="${fx(y)}" width="${fx(Math.max(1, w))}" height="${fx(barH)}" rx="2" fill="${item.color}"><title>${escapeHtml(`${item.label}: ${item.value.toLocaleString('en-US')}`)}</title></rect>`;
    }
    body += `<text class="value" x="${fx(left + Math.max(1, w) + 6)}" y="${fx(y + barH / 2 + 4)}">${escapeHtml(item.value.toLocaleString('en-US'))}</text>`;
  });
  body += `<text class="axis-title" data-axis="y" transform="translate(14,${fx(M.top + PLOT_H / 2)}) rotate(-90)" text-anchor="middle">${escapeHtml(axisTitles.y)}</text>`;
  body += `<text class="axis-title" data-axis="x" x="${fx((left + right) / 2)}" y="${H - 6}" text-anchor="middle">${escapeHtml(axisTitles.x)}</text>`;
  return frame(chart, title, body);
}

/**
 * Vertical bars per histogram bin on a count scale, x ticks at bin edges (at most about seven);
 * an overflow bin (wider than the others) is drawn apart, after a break, labelled with its maximum.
 */
export function renderHistogram(
  chart: string,
  title: string,
  bins: readonly HistogramBin[],
  options: { color: string; x: string; y: string; format?: (n: number) => string },
): string {
  if (bins.length === 0) return emptyChart(chart, title, 'no data');
  const format = options.format ?? formatCompact;
  const first = bins[0] as HistogramBin;
  const last = bins[bins.length - 1] as HistogramBin;
  const step = first.to - first.from;
  const overflow = bins.length > 1 && last.to - last.from > 1.5 * step;
  const scale = niceScale(Math.max(...bins.map((b) => b.count)), { integer: true });
  const plotW = W - M.left - M.right;
  const gap = overflow ? 10 : 0;
  const bw = (plotW - gap) / bins.length;
  const xOf = (i: number): number => M.left + i * bw + (overflow && i === bins.length - 1 ? gap : 0);
  let body = yAxis(scale, 'left', options.y);
  bins.forEach((bin, i) => {
    if (bin.count === 0) return;
    const h = (PLOT_H * bin.count) / scale.top;
    body += `<rect class="mark" x="${fx(xOf(i) + 1)}" y="${fx(M.top + PLOT_H - h)}" width="${fx(Math.max(1, bw - 2))}" height="${fx(Math.max(1, h))}" fill="${options.color}">`
      + `<title>${escapeHtml(`${format(bin.from)}–${format(bin.to)}: ${bin.count.toLocaleString('en-US')}`)}</title></rect>`;
  });
  body += xAxis(options.x);
  const equal = overflow ? bins.length - 1 : bins.length;
  const every = Math.max(1, Math.ceil(equal / 6));
  for (let i = 0; i <= equal; i += every) body += xLabel(xOf(i), format(tidy(first.from + i * step)));
  if (overflow) {
    body += `<text class="axis break" x="${fx(xOf(bins.length - 1) - gap / 2)}" y="${M.top + PLOT_H + 4}" text-anchor="middle">≈</text>`;
    body += `<text class="axis" x="${W - M.right}" y="${M.top + PLOT_H + 30}" text-anchor="end">${escapeHtml(`last bar: up to ${format(last.to)}`)}</text>`;
  }
  return frame(chart, title, body);
}
