// A run's timeline as an inline SVG: requests in flight and the concurrency limit above, rows/s,
// 429s/s and (when the limiter paced) its pace below, one point per second (the ledger's run_samples). A pure function of its input, with
// no script, font or fetch, so that the HTML report can draw the same chart; every data mark has
// class "mark", and every text is escaped.

const W = 760;
const PANEL_H = 170;
const M = { top: 62, right: 16, bottom: 26, left: 52, gap: 34 };
const PLOT_W = W - M.left - M.right;
const H = M.top + 2 * PANEL_H + M.gap + M.bottom;
const COLORS = { limit: '#3867d6', inFlight: '#20bf6b', rows: '#2d3436', throttled: '#eb3b5a', pace: '#7a4fa3', reference: '#a5b1c2' };

const esc = (value) =>
  String(value).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');
const fx = (n) => n.toFixed(1);

/** A round axis maximum at or above `value` (1, 2, 5 × 10^k). */
function niceMax(value) {
  if (!(value > 0)) return 1;
  const base = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * base).find((m) => m >= value);
}

function polyline(points, color, dash = '') {
  if (points.length === 0) return '';
  const d = points.map(([x, y]) => `${fx(x)},${fx(y)}`).join(' ');
  return `<polyline class="mark" fill="none" stroke="${color}" stroke-width="1.8"${dash ? ` stroke-dasharray="${dash}"` : ''} points="${d}"/>`;
}

function panel(top, max, label) {
  let out = `<text x="${M.left}" y="${top - 8}" font-size="12" fill="#2d3436">${esc(label)}</text>`;
  for (const f of [0, 0.5, 1]) {
    const y = top + PANEL_H * (1 - f);
    out += `<line x1="${M.left}" x2="${W - M.right}" y1="${fx(y)}" y2="${fx(y)}" stroke="#dfe4ea"/>`;
    out += `<text x="${M.left - 6}" y="${fx(y + 4)}" font-size="11" fill="#57606f" text-anchor="end">${esc(Number((max * f).toFixed(1)))}</text>`;
  }
  return out;
}

function legend(items, y) {
  let x = M.left;
  let out = '';
  for (const { label, color } of items) {
    out += `<rect x="${x}" y="${y - 9}" width="12" height="4" fill="${color}"/><text x="${x + 16}" y="${y - 4}" font-size="11" fill="#2d3436">${esc(label)}</text>`;
    x += 22 + label.length * 6.2;
  }
  return out;
}

/**
 * @param {{ title: string, points: { t: number, limit: number | null, inFlight: number, rowsPerS: number, throttledPerS: number, pace?: number | null }[],
 *           reference?: { value: number, label: string } }} input
 *   `t` in seconds since the start of the run; `reference` is a horizontal line on the lower panel
 *   (a partner's rate cap or capacity). `pace` is the rate (requests/s) the adaptive limiter paced
 *   sends at, null while it did not: drawn dashed on the lower panel when the run was paced at all.
 * @returns {string} an `<svg>` element
 */
export function renderTimelineChart({ title, points, reference }) {
  const head = `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="timeline" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img">`
    + `<title>${esc(title)}</title><rect width="${W}" height="${H}" fill="#fff"/>`
    + `<text x="${M.left}" y="18" font-size="14" font-weight="bold" fill="#2d3436">${esc(title)}</text>`;
  if (points.length === 0) {
    return `${head}<text x="${W / 2}" y="${H / 2}" font-size="13" text-anchor="middle" fill="#57606f">no samples recorded</text></svg>`;
  }
  const tMax = Math.max(1, ...points.map((p) => p.t));
  const x = (t) => M.left + (PLOT_W * t) / tMax;

  const top1 = M.top;
  const max1 = niceMax(Math.max(...points.map((p) => Math.max(p.limit ?? 0, p.inFlight))));
  const y1 = (v) => top1 + PANEL_H * (1 - v / max1);
  let body = panel(top1, max1, 'requests in flight / limit');
  body += polyline(points.filter((p) => p.limit !== null).map((p) => [x(p.t), y1(p.limit)]), COLORS.limit, '5 3');
  body += polyline(points.map((p) => [x(p.t), y1(p.inFlight)]), COLORS.inFlight);

  const top2 = top1 + PANEL_H + M.gap;
  const paced = points.some((p) => p.pace != null);
  const max2 = niceMax(Math.max(reference?.value ?? 0, ...points.map((p) => Math.max(p.rowsPerS, p.throttledPerS, p.pace ?? 0))) * 1.05);
  const y2 = (v) => top2 + PANEL_H * (1 - v / max2);
  body += panel(top2, max2, paced ? 'per second: rows done, 429s; pace (requests/s)' : 'per second: rows done, 429s');
  const barW = Math.max(1, (PLOT_W / Math.max(1, points.length)) * 0.6);
  for (const p of points) {
    if (p.throttledPerS > 0) {
      body += `<rect class="mark" x="${fx(x(p.t) - barW / 2)}" y="${fx(y2(p.throttledPerS))}" width="${fx(barW)}" height="${fx(top2 + PANEL_H - y2(p.throttledPerS))}" fill="${COLORS.throttled}"/>`;
    }
  }
  if (reference !== undefined) {
    const y = y2(reference.value);
    body += `<line x1="${M.left}" x2="${W - M.right}" y1="${fx(y)}" y2="${fx(y)}" stroke="${COLORS.reference}" stroke-dasharray="2 3"/>`
      + `<text x="${W - M.right}" y="${fx(y - 4)}" font-size="11" fill="#57606f" text-anchor="end">${esc(reference.label)}</text>`;
  }
  body += polyline(points.map((p) => [x(p.t), y2(p.rowsPerS)]), COLORS.rows);
  // The pace in stretches: a gap where the limiter did not pace.
  for (const stretch of pacedStretches(points)) body += polyline(stretch.map((p) => [x(p.t), y2(p.pace)]), COLORS.pace, '6 4');

  const axisY = top2 + PANEL_H;
  for (let i = 0; i <= 4; i += 1) {
    const t = (tMax * i) / 4;
    body += `<text x="${fx(x(t))}" y="${axisY + 16}" font-size="11" fill="#57606f" text-anchor="${i === 0 ? 'start' : i === 4 ? 'end' : 'middle'}">${esc(`${Math.round(t)} s`)}</text>`;
  }
  body += legend([
    { label: 'limit', color: COLORS.limit }, { label: 'in flight', color: COLORS.inFlight },
    { label: 'rows/s', color: COLORS.rows }, { label: '429s/s', color: COLORS.throttled },
    ...(paced ? [{ label: 'pace', color: COLORS.pace }] : []),
  ], 40);
  return `${head}${body}</svg>`;
}

/** The runs of consecutive points with a pace. */
function pacedStretches(points) {
  const stretches = [];
  let current = [];
  for (const p of points) {
    if (p.pace != null) current.push(p);
    else if (current.length > 0) {
      stretches.push(current);
      current = [];
    }
  }
  if (current.length > 0) stretches.push(current);
  return stretches;
}
