/**
 * The report as plain text for an 80-column terminal (`--format table`). Every line is at most
 * {@link TABLE_WIDTH} code points; ledger text is stripped of control characters.
 */
import { ROW_STATES } from '../ledger/index.js';
import {
  cleanText, formatFixed, formatInteger, formatPercent, formatSeconds, formatTimestamp, padCell, padCellLeft,
  truncateStart, truncateText,
} from './_text.js';
import { ATTEMPT_KINDS, ATTEMPT_OUTCOMES, type Report } from './types.js';

export const TABLE_WIDTH = 80;
/** Error groups shown in the table; the JSON has up to 100. */
const TABLE_ERROR_ROWS = 15;
const BAR_WIDTH = 30;

export function renderTable(report: Report): string {
  const lines: string[] = [];
  const push = (...more: string[]): void => void lines.push(...more);
  const { job, rows, attempts } = report;

  push(`quote-batch report · job ${job.id} · ${job.status}`, '');
  push(`  input     ${truncateStart(cleanText(job.input_path), 58)} (${cleanText(job.input_format)})`);
  push(`  mapping   ${truncateStart(cleanText(job.mapping_path), 66)}`);
  push(`  target    ${cleanText(job.environment)} · ${cleanText(job.operation)}${job.base_url === null ? '' : ` · ${cleanText(job.base_url)}`}`);
  push(`  created   ${formatTimestamp(job.created_at)}   finished ${formatTimestamp(job.finished_at)}`);

  push('', `Rows: ${formatInteger(rows.total)} · success rate ${formatPercent(rows.success_rate)} · of sent ${formatPercent(rows.sent_success_rate)}`);
  for (const state of ROW_STATES) {
    const n = rows.by_state[state];
    if (n === 0 && (state === 'pending' || state === 'in_flight')) continue;
    const share = rows.total === 0 ? 0 : n / rows.total;
    const bar = '█'.repeat(Math.round(share * BAR_WIDTH));
    push(`  ${padCell(state, 14)}${padCellLeft(formatInteger(n), 10)} ${padCellLeft(formatPercent(rows.total === 0 ? null : share), 7)}  ${bar}`);
  }

  push('', `Attempts: ${formatInteger(attempts.total)} · retries ${formatInteger(attempts.retries)} · rows retried ${formatInteger(attempts.rows_retried)}`);
  push(`  ${padCell('kind', 15)}${['attempts', 'retries', ...ATTEMPT_OUTCOMES.map(shortOutcome)].map((h) => padCellLeft(h, 9)).join('')}`);
  for (const kind of ATTEMPT_KINDS) {
    const k = attempts.by_kind[kind];
    if (k.attempts === 0) continue;
    const cells = [k.attempts, k.retries, ...ATTEMPT_OUTCOMES.map((o) => k.by_outcome[o] ?? 0)];
    push(`  ${padCell(kind, 15)}${cells.map((c) => padCellLeft(formatInteger(c), 9)).join('')}`);
  }

  push('', `Row errors (${formatInteger(report.row_error_groups)} kinds, most frequent first)`);
  if (report.row_errors.length === 0) push('  none');
  else {
    push(`  ${padCellLeft('rows', 7)}  ${padCell('state', 13)} ${padCell('error code', 26)} message`);
    for (const e of report.row_errors.slice(0, TABLE_ERROR_ROWS)) {
      push(`  ${padCellLeft(formatInteger(e.rows), 7)}  ${padCell(e.state, 13)} ${padCell(cleanText(e.error_code ?? '–'), 26)} ${truncateText(cleanText(e.error_message ?? ''), 28)}`);
    }
    if (report.row_error_groups > TABLE_ERROR_ROWS) {
      push(`  … ${formatInteger(report.row_error_groups - TABLE_ERROR_ROWS)} more kinds: see --format json or \`quote-batch export\``);
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
      push(`  ${padCellLeft(formatInteger(a.blocked_rows), 8)}  ${padCell(cleanText(a.email ?? '–'), 34)} ${truncateText(cleanText(a.message ?? ''), 32)}`);
    }
    if (report.invalid_agents.length > TABLE_ERROR_ROWS) {
      push(`  … ${formatInteger(report.invalid_agents.length - TABLE_ERROR_ROWS)} more: see --format json`);
    }
  }

  const statsHeader = ['count', 'min', 'median', 'p90', 'p99', 'max', 'mean'];
  push('', 'Premium of succeeded rows');
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

  push('', `Runs (${report.runs.length})`);
  push(`  ${padCellLeft('id', 6)}  ${padCell('status', 12)} ${padCell('started', 21)} ${padCell('finished', 21)} ${padCellLeft('time', 10)}`);
  for (const r of report.runs) {
    push(`  ${padCellLeft(String(r.id), 6)}  ${padCell(r.status, 12)} ${padCell(formatTimestamp(r.started_at), 21)} ${padCell(formatTimestamp(r.finished_at), 21)} ${padCellLeft(formatSeconds(r.seconds), 10)}`);
  }

  // A last guard: whatever the data, no line wraps in an 80-column terminal.
  return `${lines.map((line) => truncateText(line.trimEnd(), TABLE_WIDTH)).join('\n')}\n`;
}

function shortOutcome(outcome: string): string {
  return outcome === 'forbidden' ? 'forbid' : outcome === 'retryable' ? 'retry' : outcome;
}
