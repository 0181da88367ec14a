/**
 * The report as one self-contained HTML page (`--format html`): inline CSS and inline SVG, no
 * script, and a Content-Security-Policy that forbids every fetch, so it opens offline and even
 * hostile lead data (all of it escaped) cannot make the page load anything.
 */
import { ROW_STATES, type RowState } from '../ledger/index.js';
import { escapeHtml, renderBarChart, renderHistogram, renderTimeline } from './_svg.js';
import { formatFixed, formatInteger, formatPercent, formatSeconds, formatTimestamp } from './_text.js';
import type { ProblemRows } from './export-rows.js';
import { ATTEMPT_KINDS, ATTEMPT_OUTCOMES, type Report, type Stats } from './types.js';

export const STATE_COLORS: Record<RowState, string> = {
  pending: '#bab0ac',
  in_flight: '#72b7b2',
  succeeded: '#54a24b',
  rejected: '#e45756',
  agent_invalid: '#f58518',
  invalid: '#b279a2',
  duplicate: '#9d9d9d',
  failed: '#9e2a2b',
  in_doubt: '#eeca3b',
};

const CSS = `
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: var(--ink); background: #fff; }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.meta { color: var(--muted); margin: 0; }
.meta code { color: var(--ink); }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: var(--panel); border: 1px solid var(--line); vertical-align: middle; }
.kpis { display: grid; grid-template-columns: repeat(auto-fit, minmax(120px, 1fr)); gap: 10px; margin-top: 16px; }
.kpi { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.kpi b { display: block; font-size: 22px; font-variant-numeric: tabular-nums; }
.kpi span { color: var(--muted); font-size: 12px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 14px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px 6px; }
figcaption { font-weight: 600; margin-bottom: 4px; }
figcaption small { font-weight: 400; color: var(--muted); }
svg.chart { width: 100%; height: auto; display: block; }
svg .axis { font-size: 11px; fill: var(--muted); }
svg .label, svg .value { font-size: 12px; fill: var(--ink); }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .empty { font-size: 14px; fill: var(--muted); }
.tables { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 14px 24px; }
.tables > div { min-width: 0; overflow-x: auto; }
.tables > div.wide { grid-column: 1 / -1; }
h3.note { margin: 0 0 6px; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eaeef2; vertical-align: top; white-space: nowrap; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: var(--panel); }
td.n, th.n { text-align: right; }
td.msg { white-space: normal; min-width: 240px; overflow-wrap: anywhere; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
.note { color: var(--muted); font-size: 12px; }
.scroll { max-height: 560px; overflow: auto; border: 1px solid var(--line); border-radius: 8px; }
.scroll th { position: sticky; top: 0; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
`;

/** The complete HTML document. `problems` fills the table of rejected, failed and in-doubt rows. */
export function renderHtml(report: Report, problems: ProblemRows): string {
  const { job, rows, attempts, timing } = report;
  const e = escapeHtml;
  const sendKind = job.operation === 'lead' ? 'lead' : 'quote';
  const send = report.latency_ms[sendKind];

  const kpis = [
    ['rows', formatInteger(rows.total)],
    ['succeeded', formatInteger(rows.by_state.succeeded)],
    ['success rate', formatPercent(rows.success_rate)],
    ['of rows sent', formatPercent(rows.sent_success_rate)],
    ['retries', formatInteger(attempts.retries)],
    [`${sendKind} p90 latency`, send.p90 === null ? '–' : `${formatFixed(send.p90, 0)} ms`],
    ['median premium', formatFixed(report.premium.median, 2)],
    ['run time', formatSeconds(timing.run_seconds)],
    ['rows / s', formatFixed(timing.rows_per_second, 2)],
  ].map(([label, value]) => `<div class="kpi"><b>${e(value)}</b><span>${e(label)}</span></div>`).join('');

  const latencyFigures = ATTEMPT_KINDS.filter((k) => report.latency_ms[k].count > 0).map((kind) => figure(
    `Latency of ${kind} calls`,
    `${formatInteger(report.latency_ms[kind].count)} attempts, ms`,
    renderHistogram(`latency-${kind}`, `Latency of ${kind} calls (ms)`, report.latency_ms[kind].histogram, 'ms', '#72b7b2'),
  ));
  if (latencyFigures.length === 0) {
    latencyFigures.push(figure('Latency of partner calls', 'no attempts recorded', renderHistogram('latency', 'Latency', [], 'ms', '#72b7b2')));
  }

  const charts = [
    figure('Outcomes by state', `${formatInteger(rows.total)} rows`, renderBarChart(
      'outcomes', 'Rows by state',
      ROW_STATES.map((s) => ({ label: s, value: rows.by_state[s], color: STATE_COLORS[s] })),
    )),
    figure('Rows completed over time', `bars: rows per ${formatSeconds(report.completions.bucket_seconds)} · orange line: cumulative, ${formatInteger(report.timing.rows_completed)} rows`, renderTimeline(
      'completions', 'Rows completed over time', report.completions.start, report.completions.bucket_seconds, report.completions.buckets,
    )),
    ...latencyFigures,
    figure('Premium distribution', `${formatInteger(report.premium.count)} succeeded rows with a premium`, renderHistogram(
      'premium', 'Total premium of succeeded rows', report.premium.histogram, '', '#54a24b',
    )),
  ].join('');

  const stateRows = ROW_STATES.map((s) => [
    `<span class="swatch" style="background:${STATE_COLORS[s]}"></span>${e(s)}`,
    num(rows.by_state[s]),
    num(formatPercent(rows.total === 0 ? null : rows.by_state[s] / rows.total)),
  ]);
  const attemptRows = ATTEMPT_KINDS.filter((k) => attempts.by_kind[k].attempts > 0).map((k) => {
    const a = attempts.by_kind[k];
    return [e(k), num(a.attempts), num(a.subjects), num(a.retries), ...ATTEMPT_OUTCOMES.map((o) => num(a.by_outcome[o] ?? 0))];
  });
  const statsCols = ['count', 'min', 'median', 'p90', 'p95', 'p99', 'max', 'mean'];
  const statsCells = (s: Stats, decimals: number): string[] => [
    num(s.count), ...[s.min, s.median, s.p90, s.p95, s.p99, s.max, s.mean].map((v) => num(formatFixed(v, decimals))),
  ];

  const body = `
<header>
  <h1>Job ${e(job.id)} <span class="status">${e(job.status)}</span></h1>
  <p class="meta">input <code>${e(job.input_path)}</code> (${e(job.input_format)}) · mapping <code>${e(job.mapping_path)}</code></p>
  <p class="meta">${e(job.environment)} · ${e(job.operation)}${job.base_url === null ? '' : ` · <code>${e(job.base_url)}</code>`} · created ${e(formatTimestamp(job.created_at))} · finished ${e(formatTimestamp(job.finished_at))}</p>
</header>
<section class="kpis">${kpis}</section>
<h2>Charts</h2>
<section class="charts">${charts}</section>
<h2>Figures</h2>
<section class="tables">
  ${table('Rows by state', ['state', 'rows', 'share'], stateRows, [1, 2])}
  ${table(`Attempts: ${formatInteger(attempts.total)}, rows retried: ${formatInteger(attempts.rows_retried)}`,
    ['kind', 'attempts', 'rows/agents', 'retries', ...ATTEMPT_OUTCOMES], attemptRows, [1, 2, 3, 4, 5, 6, 7, 8], true)}
  ${table('Premium of succeeded rows', statsCols, [statsCells(report.premium, 2)], [0, 1, 2, 3, 4, 5, 6, 7])}
  ${table('Latency of partner calls (ms)', ['kind', ...statsCols],
    ATTEMPT_KINDS.filter((k) => report.latency_ms[k].count > 0).map((k) => [e(k), ...statsCells(report.latency_ms[k], 0)]),
    [1, 2, 3, 4, 5, 6, 7, 8], true)}
  ${table(`Row errors (${formatInteger(report.row_error_groups)} kinds)`, ['rows', 'state', 'error code', 'message'],
    report.row_errors.map((r) => [num(r.rows), e(r.state), e(r.error_code ?? '–'), msg(r.error_message)]), [0], true)}
  ${table(`Failed attempts (${formatInteger(report.attempt_error_groups)} kinds)`, ['attempts', 'kind', 'http', 'error code', 'outcome'],
    report.attempt_errors.map((a) => [num(a.attempts), e(a.kind), num(a.http_status ?? '–'), e(a.error_code ?? '–'), e(a.outcome)]), [0, 2])}
  ${table(`Invalid agents (${formatInteger(report.invalid_agents.length)})`, ['blocked rows', 'agent e-mail', 'message'],
    report.invalid_agents.map((a) => [num(a.blocked_rows), e(a.email ?? '–'), msg(a.message)]), [0])}
  ${table('Timing', ['elapsed', 'run time', 'rows done', 'rows / s'],
    [[num(formatSeconds(timing.elapsed_seconds)), num(formatSeconds(timing.run_seconds)), num(timing.rows_completed), num(formatFixed(timing.rows_per_second, 2))]], [0, 1, 2, 3])}
  ${table(`Runs (${report.runs.length})`, ['id', 'status', 'started', 'finished', 'time', 'version'],
    report.runs.map((r) => [num(r.id), e(r.status), e(formatTimestamp(r.started_at)), e(formatTimestamp(r.finished_at)), num(formatSeconds(r.seconds)), e(r.tool_version)]), [0, 4])}
</section>
<h2>Rejected, failed and in-doubt rows (${e(formatInteger(problems.total))})</h2>
${problems.total > problems.rows.length
    ? `<p class="note">Showing the first ${e(formatInteger(problems.rows.length))} of ${e(formatInteger(problems.total))}; <code>quote-batch export --job ${e(job.id)} --status rejected,failed,in_doubt</code> lists them all.</p>`
    : ''}
${problems.rows.length === 0 ? '<p class="note">None.</p>' : `<div class="scroll">${rawTable(
    ['row', 'row key', 'state', 'http', 'error code', 'message', 'agent e-mail', 'attempts'],
    problems.rows.map((r) => [num(r.row_number), e(r.row_key ?? '–'), e(r.state), num(r.http_status ?? '–'), e(r.error_code ?? '–'),
      msg(r.error_message), e(r.agent_email ?? '–'), num(r.attempts)]),
    [0, 3, 7],
  )}</div>`}
<footer>Generated ${e(report.generated_at)} by quote-batch · report version ${e(report.report_version)} · percentiles are nearest-rank · times in UTC</footer>`;

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>quote-batch report · job ${escapeHtml(job.id)}</title>
<style>${CSS}</style>
</head>
<body><main>${body}
</main></body>
</html>
`;
}

function figure(title: string, note: string, svg: string): string {
  return `<figure><figcaption>${escapeHtml(title)} <small>${escapeHtml(note)}</small></figcaption>${svg}</figure>`;
}

/** A right-aligned numeric cell (already-escaped text when a string). */
function num(value: number | string): string {
  return `<td class="n">${escapeHtml(typeof value === 'number' ? value.toLocaleString('en-US') : value)}</td>`;
}

function msg(value: string | null): string {
  return `<td class="msg">${escapeHtml(value ?? '')}</td>`;
}

/** Wraps plain (escaped) cells in `<td>`; cells already rendered by num/msg pass through. */
function cell(value: string): string {
  return value.startsWith('<td') ? value : `<td>${value}</td>`;
}

function rawTable(headers: readonly string[], rows: readonly string[][], numeric: readonly number[]): string {
  const head = headers.map((h, i) => `<th${numeric.includes(i) ? ' class="n"' : ''}>${escapeHtml(h)}</th>`).join('');
  const body = rows.length === 0
    ? `<tr><td colspan="${headers.length}" class="note">none</td></tr>`
    : rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('\n');
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function table(title: string, headers: readonly string[], rows: readonly string[][], numeric: readonly number[], wide = false): string {
  return `<div${wide ? ' class="wide"' : ''}><h3 class="note">${escapeHtml(title)}</h3>${rawTable(headers, rows, numeric)}</div>`;
}
