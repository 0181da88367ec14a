/**
 * The report as one self-contained HTML page (`--format html`): inline CSS and inline SVG, no
 * script, and a Content-Security-Policy that forbids every fetch, so it opens offline and even
 * hostile lead data (all of it escaped) cannot make the page load anything. The layout holds from
 * an 800 px window to a laptop screen: charts and tables go to one column, long text wraps.
 */
import { ROW_STATES, type RowState } from '../ledger/index.js';
import { commandFor, settleInDoubt, unreadableAnswersText } from '../advice.js';
import { announcedSentence, jobStatusLabel, runStatusLabel, settledAtCeiling, stoppedNote, timelinePaced } from './_buckets.js';
import { escapeHtml, formatUsd, renderBarChart, renderHistogram } from './_svg.js';
import { formatFixed, formatInteger, formatLimit, formatPercent, formatSeconds, formatTimestamp } from './_text.js';
import {
  renderCompletionsChart, renderConcurrencyChart, renderThroughputChart, SERIES_COLORS,
} from './_time-charts.js';
import { PROBLEM_STATES, type ProblemRows } from './export-rows.js';
import { ATTEMPT_KINDS, ATTEMPT_OUTCOMES, ERROR_STATES, type Report, type Stats } from './types.js';

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
p { margin: 6px 0; }
.meta { color: var(--muted); margin: 0; overflow-wrap: anywhere; }
.meta code { color: var(--ink); }
code { font-size: 12.5px; overflow-wrap: anywhere; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: var(--panel); border: 1px solid var(--line); vertical-align: middle; }
.kpis { display: grid; grid-template-columns: repeat(auto-fill, minmax(130px, 1fr)); gap: 10px; margin-top: 16px; }
.kpi { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.kpi b { display: block; font-size: 21px; font-variant-numeric: tabular-nums; white-space: nowrap; }
.kpi span { color: var(--muted); font-size: 12px; }
.charts, .tables { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 440px), 1fr)); gap: 14px 24px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px 6px; min-width: 0; }
figcaption { font-weight: 600; margin-bottom: 4px; }
figcaption small { font-weight: 400; color: var(--muted); }
.key { display: inline-block; margin-right: 10px; font-weight: 400; font-size: 12px; color: var(--muted); white-space: nowrap; }
.key i { display: inline-block; width: 14px; height: 4px; border-radius: 2px; margin-right: 4px; vertical-align: middle; }
svg.chart { width: 100%; height: auto; display: block; }
svg .axis { font-size: 11px; fill: var(--muted); font-variant-numeric: tabular-nums; }
svg .axis-title, svg .run-label { font-size: 11.5px; fill: var(--ink); }
svg .gap-label { font-size: 10px; fill: var(--muted); }
svg .label, svg .value { font-size: 12px; fill: var(--ink); }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .axis-line, svg .tick { stroke: #8c959f; stroke-width: 1; }
svg .gap { fill: #eef1f4; }
svg .settled { stroke: var(--ink); stroke-width: 1; stroke-dasharray: 5 4; }
svg .settled-label { font-size: 11px; fill: var(--ink); }
svg path.pace { stroke-dasharray: 6 4; }
svg .empty { font-size: 14px; fill: var(--muted); }
.tables > div { min-width: 0; }
.tables > div.wide { grid-column: 1 / -1; }
h3.note { margin: 0 0 6px; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eaeef2; vertical-align: top; white-space: nowrap; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: var(--panel); }
td.n, th.n { text-align: right; }
td.wrap { white-space: normal; overflow-wrap: anywhere; }
td.msg { white-space: normal; overflow-wrap: anywhere; min-width: 12em; }
td.code { min-width: 7em; }
td.lead { min-width: 10.5em; }
td small { display: block; color: var(--muted); font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
.note { color: var(--muted); font-size: 12px; }
table.problem-rows th { position: sticky; top: 0; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
`;

/**
 * Rows the HTML report lists are read by `readProblemRows`: the cap and the total come with them.
 * `ledger`: the ledger's path, for the commands the report suggests.
 */
export function renderHtml(report: Report, problems: ProblemRows, ledger?: string): string {
  const { job, rows, attempts, timing, partner } = report;
  const here = { ledger, job: job.id };
  const e = escapeHtml;
  const sendKind = job.operation === 'lead' ? 'lead' : 'quote';
  const send = report.latency_ms[sendKind];

  const kpis = [
    ['rows', formatInteger(rows.total)],
    ['succeeded', formatInteger(rows.by_state.succeeded)],
    ['success rate', formatPercent(rows.success_rate)],
    ['of rows sent', formatPercent(rows.sent_success_rate)],
    ...(rows.by_other_jobs.sent + rows.by_other_jobs.rejected > 0
      ? [['sent before, by other jobs', formatInteger(rows.by_other_jobs.sent + rows.by_other_jobs.rejected)]]
      : []),
    ['error kinds', formatInteger(report.row_error_groups)],
    ['retries', formatInteger(attempts.retries)],
    [`${sendKind} p90 latency`, send.p90 === null ? '–' : `${formatFixed(send.p90, 0)} ms`],
    ['median premium', usd(report.premium.median)],
    ['run time', formatSeconds(timing.run_seconds)],
    ['rows / s', formatFixed(timing.rows_per_second, 2)],
    ['settled limit', formatLimit(partner.settled_limit)],
    ['429 share', formatPercent(partner.throttled_share)],
  ].map(([label, value]) => `<div class="kpi"><b>${e(value)}</b><span>${e(label)}</span></div>`).join('');

  const rowCharts = [
    figure('Outcomes by state', `${formatInteger(rows.total)} rows`, renderBarChart(
      'outcomes', 'Rows by state', ROW_STATES.map((s) => ({ label: s, value: rows.by_state[s], color: STATE_COLORS[s] })),
      { x: 'rows', y: 'state' },
    )),
    figure('Rows completed over time', keys([[SERIES_COLORS.rows, `rows per ${formatSeconds(report.timeline.bucket_seconds)} (left)`],
      [SERIES_COLORS.cumulative, `cumulative, ${formatInteger(timing.rows_completed)} rows (right)`]])
      + (report.timeline.rows_outside_runs > 0 ? ` · ${formatInteger(report.timeline.rows_outside_runs)} completed outside any run, not drawn` : ''),
    renderCompletionsChart(report.timeline), true),
  ];
  const partnerCharts = [
    figure('Requests in flight and the limit', keys([[SERIES_COLORS.limit, 'concurrency limit'], [SERIES_COLORS.inFlight, 'in flight'], ['#1f2328', 'settled limit (dashed)']]),
      renderConcurrencyChart(report.timeline, partner.settled_limit, settledAtCeiling(partner)), true),
    figure('Throughput and 429s', keys([[SERIES_COLORS.throughput, 'rows / s (left)'],
      ...(timelinePaced(report.timeline) ? [[DASHED_PACE_KEY, 'pace, requests / s (left)'] as [string, string]] : []),
      [SERIES_COLORS.throttled, '429s, % of answers (right)']]),
      renderThroughputChart(report.timeline), true),
  ];
  const latencyCharts = ATTEMPT_KINDS.filter((k) => report.latency_ms[k].count > 0).map((kind) => figure(
    `Latency of ${kind} calls`, `${formatInteger(report.latency_ms[kind].count)} attempts`,
    renderHistogram(`latency-${kind}`, `Latency of ${kind} calls`, report.latency_ms[kind].histogram, { color: '#72b7b2', x: 'latency (ms)', y: 'attempts' }),
  ));
  if (latencyCharts.length === 0) {
    latencyCharts.push(figure('Latency of partner calls', 'no attempts recorded',
      renderHistogram('latency', 'Latency', [], { color: '#72b7b2', x: 'latency (ms)', y: 'attempts' })));
  }
  const premiumChart = figure('Premium distribution', `${formatInteger(report.premium.count)} succeeded rows with a premium`, renderHistogram(
    'premium', 'Premium of each succeeded row', report.premium.histogram, { color: '#54a24b', x: 'total premium (USD)', y: 'rows', format: formatUsd },
  ));

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
  const statsCells = (s: Stats, cell: (v: number | null) => string): string[] => [
    num(s.count), ...[s.min, s.median, s.p90, s.p95, s.p99, s.max, s.mean].map((v) => num(cell(v))),
  ];
  const stopped = stoppedNote(report);
  const exportAll = commandFor('export', here, `--status ${problemStates(report).join(',')}`);

  const body = `
<header>
  <h1>Job ${e(job.id)} <span class="status">${e(jobStatusLabel(report))}</span></h1>
  <p class="meta">input <code>${e(job.input_path)}</code> (${e(job.input_format)}) · mapping <code>${e(job.mapping_path)}</code></p>
  <p class="meta">${e(job.environment)} · ${e(job.operation)}${job.base_url === null ? '' : ` · <code>${e(job.base_url)}</code>`} · created ${e(formatTimestamp(job.created_at))} · finished ${e(formatTimestamp(job.finished_at))}</p>
${stopped === undefined ? '' : `  <p class="meta">stopped: ${e(stopped)}</p>\n`}</header>
<section class="kpis">${kpis}</section>
${rows.unreadable_answers > 0 ? `<p class="note">Of the succeeded rows, ${e(unreadableAnswersText(rows.unreadable_answers))}: <code>${e(commandFor('export', here, '--status succeeded'))}</code>.</p>\n` : ''}${report.rows.by_state.in_doubt > 0 ? `<p class="note">${e(formatInteger(report.rows.by_state.in_doubt))} rows in doubt: they may have reached the partner; ${e(settleInDoubt(here))}.</p>\n` : ''}<h2>Errors by kind (${e(formatInteger(report.row_error_groups))})</h2>
<p class="note">Rows ${e(ERROR_STATES.join(', '))}, grouped by state, error code and what went wrong, with row numbers, values and ids taken out — as the run summary and <code>quote-batch check</code> group them.
To hand the rows back in the input's own layout: <code>${e(commandFor('export', here, `--status rejected,invalid,agent_invalid --format source --out to-fix.${job.input_format}`))}</code>.</p>
${rawTable(['rows', 'kind: state · error code · what went wrong', 'sample rows'],
    report.row_errors.map((g) => [num(g.rows), msg(g.kind), wrap(g.sample_rows.join(', '))]), [0], 'error-groups')}
${report.row_error_groups > report.row_errors.length ? `<p class="note">The ${e(report.row_errors.length)} largest of ${e(formatInteger(report.row_error_groups))} kinds; <code>quote-batch report --format json</code> has the same list.</p>` : ''}
<h2>Rows</h2>
<section class="charts">${rowCharts.join('')}</section>
<h2>The partner's limit</h2>
<p>${e(partnerSentence(report))}</p>
<section class="charts">${partnerCharts.join('')}</section>
<h2>Latency and premiums</h2>
<section class="charts">${[...latencyCharts, premiumChart].join('')}</section>
<h2>Figures</h2>
<section class="tables">
  ${table('Rows by state', ['state', 'rows', 'share'], stateRows, [1, 2])}
  ${table('Timing', ['elapsed', 'run time', 'rows done', 'rows / s'],
    [[num(formatSeconds(timing.elapsed_seconds)), num(formatSeconds(timing.run_seconds)), num(timing.rows_completed), num(formatFixed(timing.rows_per_second, 2))]], [0, 1, 2, 3])}
  ${table(`Attempts: ${formatInteger(attempts.total)}, rows retried: ${formatInteger(attempts.rows_retried)}`,
    ['kind', 'attempts', 'rows/agents', 'retries', ...ATTEMPT_OUTCOMES], attemptRows, [1, 2, 3, 4, 5, 6, 7, 8], true)}
  ${table('Premium of succeeded rows (USD)', statsCols, [statsCells(report.premium, usd)], [0, 1, 2, 3, 4, 5, 6, 7], true)}
  ${table('Latency of partner calls (ms)', ['kind', ...statsCols],
    ATTEMPT_KINDS.filter((k) => report.latency_ms[k].count > 0).map((k) => [e(k), ...statsCells(report.latency_ms[k], (v) => formatFixed(v, 0))]),
    [1, 2, 3, 4, 5, 6, 7, 8], true)}
  ${table(`Failed attempts (${formatInteger(report.attempt_error_groups)} kinds)`, ['attempts', 'kind', 'http', 'error code', 'outcome'],
    report.attempt_errors.map((a) => [num(a.attempts), e(a.kind), num(a.http_status ?? '–'), wrap(a.error_code ?? '–'), e(a.outcome)]), [0, 2])}
  ${table(`Invalid agents (${formatInteger(report.invalid_agents.length)})`, ['blocked rows', 'agent e-mail', 'message'],
    report.invalid_agents.map((a) => [num(a.blocked_rows), wrap(a.email ?? '–'), msg(a.message)]), [0])}
  ${table(`Runs (${report.runs.length})`, ['id', 'status', 'started', 'finished', 'time', 'version', 'why it stopped'],
    report.runs.map((r) => [num(r.id), e(runStatusLabel(r)), e(formatTimestamp(r.started_at)), e(formatTimestamp(r.finished_at)), num(formatSeconds(r.seconds)), e(r.tool_version), msg(r.end_reason ?? '')]), [0, 4], true)}
</section>
<h2>Rows to look at: every state but succeeded (${e(formatInteger(problems.total))})</h2>
${problems.total > problems.rows.length
    ? `<p class="note">The first ${e(formatInteger(problems.rows.length))} of ${e(formatInteger(problems.total))}, in row order. All of them: <code>${e(exportAll)} --out rows.csv</code> (or <code>--format source</code> for the input's own rows).</p>`
    : ''}
${problems.rows.length === 0 ? '<p class="note">None.</p>' : rawTable(
    ['row', 'state · HTTP · attempts', 'error code', 'message', 'row key · agent e-mail'],
    problems.rows.map((r) => [
      num(r.row_number),
      `<span class="swatch" style="background:${STATE_COLORS[r.state]}"></span>${e(r.state)}<small>${e(sendText(r.http_status, r.attempts))}</small>`,
      `<td class="wrap code">${breakable(r.error_code ?? '–')}</td>`,
      msg(r.error_message),
      `<td class="wrap lead">${e(r.row_key ?? '–')}<small>${e(r.agent_email ?? '–')}</small></td>`,
    ]),
    [0], 'problem-rows',
  )}
<footer>Generated ${e(report.generated_at)} by quote-batch · report version ${e(report.report_version)} · percentiles are nearest-rank · times in UTC · premiums in USD</footer>`;

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

/** The states that have rows to look at, for the export command the page suggests. */
function problemStates(report: Report): RowState[] {
  const present = PROBLEM_STATES.filter((s) => report.rows.by_state[s] > 0);
  return present.length === 0 ? [...PROBLEM_STATES] : present;
}

function partnerSentence(report: Report): string {
  const p = report.partner;
  const share = p.attempts === 0
    ? 'no request was sent.'
    : `${formatInteger(p.throttled)} of ${formatInteger(p.attempts)} answers were 429 (${formatPercent(p.throttled_share)}).`;
  const announced = p.announced === null ? '' : ` The partner announced ${announcedSentence(p.announced)}.`;
  if (p.settled_limit === null) {
    if (p.attempts === 0) return 'No limit shown: no request was sent.';
    return (p.samples > 0
      ? `No limit shown: no request had an answer but failures (refused, reset, 5xx, time-outs), so the runs say nothing of the partner's limit; ${share}`
      : `No per-second samples in this ledger (a run of an older quote-batch, or none yet), so the limit over time is unknown; ${share}`) + announced;
  }
  const paced = p.settled_pace === null ? ''
    : p.announced !== null && p.announced.distrusted_after_ms === null && p.announced.paced_seconds > 0 && p.announced.run_id === p.settled_run_id
      ? `, paced at ${formatFixed(p.settled_pace, 1)} requests/s (the rate the partner announces)`
      : `, paced at ${formatFixed(p.settled_pace, 1)} requests/s since the partner's 429s (about its rate limit)`;
  const ceiling = settledAtCeiling(p) ? ', its --concurrency ceiling: the partner showed no lower limit'
    : p.settled_held_by_run ? ', where the run left it: it seldom filled that window and met no 429 or failure (--rate held the sends back, or rows came slower than the partner answered), so the partner showed no limit' : '';
  return `Run ${p.settled_run_id ?? '–'} settled at ${formatLimit(p.settled_limit)} requests in flight (the median limit of its last ${formatInteger(p.settled_samples)} seconds)${ceiling}${paced}; `
    + `the limit peaked at ${formatLimit(p.limit_max)} and requests in flight at ${formatFixed(p.in_flight_max, 0)}. ${share}${announced}`;
}

function usd(value: number | null): string {
  return value === null ? '–' : `$${formatFixed(value, 2)}`;
}

/** The legend's mark of the dashed pace line. */
const DASHED_PACE_KEY = `repeating-linear-gradient(90deg, ${SERIES_COLORS.pace} 0 5px, transparent 5px 8px)`;

/** A legend: a short coloured line (a CSS background) and a label per series. */
function keys(items: readonly [string, string][]): string {
  return items.map(([color, label]) => `<span class="key"><i style="background:${color}"></i>${escapeHtml(label)}</span>`).join('');
}

/** `note` is trusted HTML when `noteIsHtml` (a legend), else text. */
function figure(title: string, note: string, svg: string, noteIsHtml = false): string {
  return `<figure><figcaption>${escapeHtml(title)} <small>${noteIsHtml ? note : escapeHtml(note)}</small></figcaption>${svg}</figure>`;
}

/** A right-aligned numeric cell (already-escaped text when a string). */
function num(value: number | string): string {
  return `<td class="n">${escapeHtml(typeof value === 'number' ? value.toLocaleString('en-US') : value)}</td>`;
}

/** A cell of long text that wraps anywhere (messages). */
function msg(value: string | null): string {
  return `<td class="msg">${escapeHtml(value ?? '')}</td>`;
}

/** A cell of an id or e-mail that may wrap rather than widen the table. */
function wrap(value: string): string {
  return `<td class="wrap">${escapeHtml(value)}</td>`;
}

/** What became of a row's requests: `not sent`, or its last HTTP status (if any) and its attempts. */
function sendText(httpStatus: number | null, attempts: number): string {
  if (attempts === 0) return 'not sent';
  return `${httpStatus === null ? 'no answer' : `HTTP ${httpStatus}`} · ${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}`;
}

/** Escaped text that may wrap after an underscore (`missing_required_parameter`). */
function breakable(value: string): string {
  return escapeHtml(value).replaceAll('_', '_<wbr>');
}

/** Wraps plain (escaped) cells in `<td>`; cells already rendered by num/msg/wrap pass through. */
function cell(value: string): string {
  return value.startsWith('<td') ? value : `<td>${value}</td>`;
}

function rawTable(headers: readonly string[], rows: readonly string[][], numeric: readonly number[], className?: string): string {
  const head = headers.map((h, i) => `<th${numeric.includes(i) ? ' class="n"' : ''}>${escapeHtml(h)}</th>`).join('');
  const body = rows.length === 0
    ? `<tr><td colspan="${headers.length}" class="note">none</td></tr>`
    : rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('\n');
  return `<table${className === undefined ? '' : ` class="${className}"`}><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function table(title: string, headers: readonly string[], rows: readonly string[][], numeric: readonly number[], wide = false): string {
  return `<div${wide ? ' class="wide"' : ''}><h3 class="note">${escapeHtml(title)}</h3>${rawTable(headers, rows, numeric)}</div>`;
}
