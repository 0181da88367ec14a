/**
 * The report as plain text for a terminal (`--format table`). Every line is at most `width` code
 * points (the terminal's width; {@link DEFAULT_TABLE_WIDTH} when output is not a terminal); ledger
 * text is stripped of control characters. Error kinds wrap rather than being cut.
 */
import { formatErrorGroupLines, wrapWords } from '../error-groups.js';
import { ROW_STATES } from '../ledger/index.js';
import { commandFor, settleInDoubt, unreadableAnswersText } from '../advice.js';
import { announcedSentence, jobStatusLabel, runStatusLabel, settledAtCeiling, stoppedNote, timelinePaced } from './_buckets.js';
import {
  cleanText, formatFixed, formatInteger, formatLimit, formatPercent, formatSeconds, formatTimestamp, padCell, padCellLeft,
  truncateStart, truncateText,
} from './_text.js';
import { ATTEMPT_KINDS, ATTEMPT_OUTCOMES, type Report, type ReportTimelineBucket } from './types.js';

/** Width of the table when standard output is not a terminal (a file, a pipe). */
export const DEFAULT_TABLE_WIDTH = 100;
/** Narrowest table drawn: its fixed columns need this much. */
const MIN_TABLE_WIDTH = 80;
/** Error groups shown in the table; the JSON has up to 100. */
const TABLE_ERROR_ROWS = 15;
const BAR_WIDTH = 30;

/** `options.ledger`: the ledger's path, for the commands the report suggests. */
export function renderTable(report: Report, options: { width?: number; ledger?: string } = {}): string {
  const width = Math.max(MIN_TABLE_WIDTH, Math.floor(options.width ?? DEFAULT_TABLE_WIDTH));
  const lines: string[] = [];
  const push = (...more: string[]): void => void lines.push(...more);
  const { job, rows, attempts } = report;
  const here = { ledger: options.ledger, job: job.id };

  push(`quote-batch report · job ${job.id} · ${jobStatusLabel(report)}`, '');
  const format = ` (${cleanText(job.input_format)})`;
  push(`  input     ${truncateStart(cleanText(job.input_path), width - 12 - format.length)}${format}`);
  push(`  mapping   ${truncateStart(cleanText(job.mapping_path), width - 12)}`);
  push(`  target    ${cleanText(job.environment)} · ${cleanText(job.operation)}${job.base_url === null ? '' : ` · ${cleanText(job.base_url)}`}`);
  push(`  created   ${formatTimestamp(job.created_at)}   finished ${formatTimestamp(job.finished_at)}`);
  const stopped = stoppedNote(report);
  if (stopped !== undefined) push(...wrapWords(cleanText(stopped), width - 12, 4).map((line, i) => `  ${i === 0 ? 'stopped ' : '        '}  ${line}`));

  push('', `Rows: ${formatInteger(rows.total)} · success rate ${formatPercent(rows.success_rate)} · of sent ${formatPercent(rows.sent_success_rate)}`);
  const { sent: sentBefore, rejected: rejectedBefore } = rows.by_other_jobs;
  if (sentBefore + rejectedBefore > 0) {
    push(`  by other jobs, not sent: ${formatInteger(sentBefore)} leads sent before (duplicate), ${formatInteger(rejectedBefore)} requests rejected before`);
    const { in_doubt_there: doubtful, in_doubt_jobs: doubtJobs } = rows.by_other_jobs;
    if (doubtful > 0) push(`    of those leads, ${formatInteger(doubtful)} only may have been sent: in doubt in job ${doubtJobs.join(', ')}; settle them there (resolve)`);
  }
  for (const state of ROW_STATES) {
    const n = rows.by_state[state];
    if (n === 0 && (state === 'pending' || state === 'in_flight')) continue;
    const share = rows.total === 0 ? 0 : n / rows.total;
    const bar = '█'.repeat(Math.round(share * BAR_WIDTH));
    push(`  ${padCell(state, 14)}${padCellLeft(formatInteger(n), 10)} ${padCellLeft(formatPercent(rows.total === 0 ? null : share), 7)}  ${bar}`);
  }
  if (rows.unreadable_answers > 0) {
    push(...wrapWords(`of succeeded, ${unreadableAnswersText(rows.unreadable_answers)} (${commandFor('export', here, '--status succeeded')})`, width - 4, 3).map((line) => `  ${line}`));
  }
  if (rows.by_state.in_doubt > 0) {
    push(...wrapWords(`${formatInteger(rows.by_state.in_doubt)} in doubt: they may have reached the partner; ${settleInDoubt(here)}`, width - 4, 3).map((line) => `  ${line}`));
  }

  push('', `Attempts: ${formatInteger(attempts.total)} · retries ${formatInteger(attempts.retries)} · rows retried ${formatInteger(attempts.rows_retried)}`);
  push(`  ${padCell('kind', 15)}${['attempts', 'retries', ...ATTEMPT_OUTCOMES.map(shortOutcome)].map((h) => padCellLeft(h, 9)).join('')}`);
  for (const kind of ATTEMPT_KINDS) {
    const k = attempts.by_kind[kind];
    if (k.attempts === 0) continue;
    const cells = [k.attempts, k.retries, ...ATTEMPT_OUTCOMES.map((o) => k.by_outcome[o] ?? 0)];
    push(`  ${padCell(kind, 15)}${cells.map((c) => padCellLeft(formatInteger(c), 9)).join('')}`);
  }

  push('', `Row errors by kind (${formatInteger(report.row_error_groups)} ${report.row_error_groups === 1 ? 'kind' : 'kinds'}, most rows first)`);
  if (report.row_errors.length === 0) push('  none');
  else {
    push(`  ${padCellLeft('rows', 7)}  kind: state · error code · what went wrong`);
    for (const e of report.row_errors.slice(0, TABLE_ERROR_ROWS)) {
      push(...formatErrorGroupLines({ count: e.rows, description: e.kind, sampleRows: e.sample_rows }, width));
    }
    if (report.row_error_groups > TABLE_ERROR_ROWS) {
      push(`  … ${formatInteger(report.row_error_groups - TABLE_ERROR_ROWS)} more kinds: see --format json, or \`${commandFor('export', here, '--status …')}\` for the rows`);
    }
  }

  if (report.attempt_errors.length > 0) {
    push('', `Failed attempts (${formatInteger(report.attempt_error_groups)} kinds, most frequent first)`);
    push(`  ${padCellLeft('attempts', 9)}  ${padCell('kind', 15)} ${padCellLeft('http', 4)}  ${padCell('error code', 30)} outcome`);
    for (const e of report.attempt_errors.slice(0, TABLE_ERROR_ROWS)) {
      push(`  ${padCellLeft(formatInteger(e.attempts), 9)}  ${padCell(e.kind, 15)} ${padCellLeft(e.http_status === null ? '–' : String(e.http_status), 4)}  ${padCell(cleanText(e.error_code ?? '–'), 30)} ${truncateText(cleanText(e.outcome), 13)}`);
    }
  }

  if (report.invalid_agents.length > 0) {
    push('', `Invalid agents (${formatInteger(report.invalid_agents.length)})`);
    push(`  ${padCellLeft('blocked', 8)}  ${padCell('agent e-mail', 34)} message`);
    for (const a of report.invalid_agents.slice(0, TABLE_ERROR_ROWS)) {
      push(`  ${padCellLeft(formatInteger(a.blocked_rows), 8)}  ${padCell(cleanText(a.email ?? '–'), 34)} ${truncateText(cleanText(a.message ?? ''), width - 47)}`);
    }
    if (report.invalid_agents.length > TABLE_ERROR_ROWS) {
      push(`  … ${formatInteger(report.invalid_agents.length - TABLE_ERROR_ROWS)} more: see --format json`);
    }
  }

  const statsHeader = ['count', 'min', 'median', 'p90', 'p99', 'max', 'mean'];
  push('', 'Premium of succeeded rows (USD)');
  push(`  ${statsHeader.map((h) => padCellLeft(h, 10)).join('')}`);
  const p = report.premium;
  push(`  ${[formatInteger(p.count), ...[p.min, p.median, p.p90, p.p99, p.max, p.mean].map((v) => formatFixed(v, 2))].map((c) => padCellLeft(c, 10)).join('')}`);

  push('', 'Latency of partner calls (ms)');
  push(`  ${padCell('kind', 15)}${statsHeader.map((h) => padCellLeft(h, 9)).join('')}`);
  for (const kind of ATTEMPT_KINDS) {
    const l = report.latency_ms[kind];
    if (l.count === 0) continue;
    push(`  ${padCell(kind, 15)}${[formatInteger(l.count), ...[l.min, l.median, l.p90, l.p99, l.max, l.mean].map((v) => formatFixed(v, 0))].map((c) => padCellLeft(c, 9)).join('')}`);
  }

  const t = report.timing;
  push('', `Timing: elapsed ${formatSeconds(t.elapsed_seconds)} · run time ${formatSeconds(t.run_seconds)} · ${formatInteger(t.rows_completed)} rows done · ${formatFixed(t.rows_per_second, 2)} rows/s`);

  push('', ...partnerLines(report, width));

  push('', `Runs (${report.runs.length})`);
  const statusWidth = Math.max(12, ...report.runs.map((r) => runStatusLabel(r).length + 1));
  push(`  ${padCellLeft('id', 6)}  ${padCell('status', statusWidth)} ${padCell('started', 21)} ${padCell('finished', 21)} ${padCellLeft('time', 10)}`);
  for (const r of report.runs) {
    push(`  ${padCellLeft(String(r.id), 6)}  ${padCell(runStatusLabel(r), statusWidth)} ${padCell(formatTimestamp(r.started_at), 21)} ${padCell(formatTimestamp(r.finished_at), 21)} ${padCellLeft(formatSeconds(r.seconds), 10)}`);
    if (r.end_reason !== null) push(...wrapWords(cleanText(r.end_reason), width - 10, 3).map((line) => `${' '.repeat(10)}${line}`));
  }

  // A last guard: whatever the data, no line wraps in the terminal.
  return `${lines.map((line) => truncateText(line.trimEnd(), width)).join('\n')}\n`;
}

/** The partner's limit: where the run settled, 429s, and the limit and throughput over time as sparklines. */
function partnerLines(report: Report, width: number): string[] {
  const p = report.partner;
  const share = `429 answers: ${formatInteger(p.throttled)} of ${formatInteger(p.attempts)} (${formatPercent(p.throttled_share)})`;
  const announced = p.announced === null ? [] : wrapWords(`Announced: ${announcedSentence(p.announced)}`, width - 2, 4).map((line, i) => (i === 0 ? line : `  ${line}`));
  if (p.settled_limit === null) {
    const why = p.attempts === 0 ? 'none shown (no request was sent)'
      : p.samples > 0 ? 'none shown (no request had an answer but failures: refused, reset, 5xx, time-outs)' : 'no per-second samples in this ledger';
    return [`Partner's limit: ${why} · ${share}`, ...announced];
  }
  const lines = [
    `Partner's limit: settled at ${formatLimit(p.settled_limit)} requests in flight${p.settled_pace === null ? '' : `, paced at ${formatFixed(p.settled_pace, 1)} requests/s`}${settledAtCeiling(p) ? ' (the --concurrency ceiling: no lower limit shown)' : p.settled_held_by_run ? ' (the run seldom filled it and met no 429: no limit of the partner\'s)' : ''}`,
    `  run ${p.settled_run_id ?? '–'}, median of its last ${formatInteger(p.settled_samples)} samples · peak limit ${formatLimit(p.limit_max)} · peak in flight ${formatFixed(p.in_flight_max, 0)}`,
    `  ${share}`,
    ...announced.map((line) => `  ${line}`),
  ];
  const segments = report.timeline.segments;
  const per = formatSeconds(report.timeline.bucket_seconds);
  const room = width - 24;
  type Series = [string, (b: ReportTimelineBucket) => number | null];
  const series: Series[] = [
    ['concurrency limit', (b) => b.concurrency_limit],
    ['rows / s', (b) => b.rows_per_second],
    // The pace only for a run that was paced: a row of blanks says nothing.
    ...(timelinePaced(report.timeline) ? [['pace, requests / s', (b) => b.pace_rate] as Series] : []),
    ['429s / s', (b) => (b.samples === 0 ? null : b.throttled / b.samples)],
  ];
  for (const [label, value] of series) {
    const values = segments.map((s) => s.buckets.map(value));
    const max = Math.max(0, ...values.flat().map((v) => v ?? 0));
    const line = values.map((run) => sparkline(run, max)).join('│');
    lines.push(`  ${padCell(label, 18)}  ${truncateText(line, room)}${max > 0 ? ` max ${formatFixed(max, max >= 10 ? 0 : 1)}` : ''}`);
  }
  lines.push(`  (one mark per ${per}; │ separates runs)`);
  return lines;
}

const SPARKS = '▁▂▃▄▅▆▇█';

/** One character per value, its height relative to `max`; a space where there is no value. */
function sparkline(values: readonly (number | null)[], max: number): string {
  return values.map((v) => (v === null ? ' ' : SPARKS[max <= 0 ? 0 : Math.min(7, Math.round((7 * v) / max))])).join('');
}

function shortOutcome(outcome: string): string {
  return outcome === 'forbidden' ? 'forbid' : outcome === 'retryable' ? 'retry' : outcome;
}
