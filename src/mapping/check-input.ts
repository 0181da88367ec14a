/**
 * The offline check of a whole input file: read, map and validate every row, send nothing.
 * Used by `quote-batch check`; memory stays flat (only counts and the first invalid rows are kept).
 */
import { openInput } from '../input/index.js';
import { formatRowIssue } from './format.js';
import { resolveInputOptions } from './input-options.js';
import type { CompiledMapping, RowIssue } from './types.js';

export interface CheckOptions {
  /** Invalid rows kept with their messages (the rest are only counted). Default 20. */
  keepInvalidRows?: number;
  /** Stops reading when aborted (the summary then covers the rows read). */
  signal?: AbortSignal;
}

/** How often one problem (same request path pattern and message) occurred. */
export interface IssueCount {
  /** Request path with indexes removed, e.g. `application.drivers[].dob`; `(input)` for unreadable rows. */
  path: string;
  message: string;
  /** Source columns seen with it (indexes kept: `driver2_dob`). */
  columns: string[];
  count: number;
  /** The first rows where it occurred (at most 5). */
  rows: number[];
}

export interface InvalidRow {
  row: number;
  line: number;
  /** One formatted line per issue (see formatRowIssue). */
  messages: string[];
  issues: RowIssue[];
}

export interface CheckSummary {
  input: string;
  mapping: string;
  format: string;
  rows: number;
  valid: number;
  invalid: number;
  /** Rows that could not be read at all (counted in `invalid` too). */
  unreadable: number;
  rowsWithWarnings: number;
  warnings: number;
  /** True when the check stopped early (Ctrl-C). */
  interrupted: boolean;
  durationMs: number;
  /** Most frequent errors first. */
  topErrors: IssueCount[];
  topWarnings: IssueCount[];
  /** The first invalid rows (see {@link CheckOptions.keepInvalidRows}). */
  invalidRows: InvalidRow[];
}

const INDEX = /\[\d+\]/g;

/** Checks every row of `inputPath`; throws E_INPUT/E_MAPPING before the first row when the file or header is unusable. */
export async function checkInput(inputPath: string, mapping: CompiledMapping, options: CheckOptions = {}): Promise<CheckSummary> {
  const keep = options.keepInvalidRows ?? 20;
  const started = performance.now();
  const reader = await openInput(inputPath, { ...resolveInputOptions(inputPath, mapping), signal: options.signal });
  const errors = new Map<string, IssueCount>();
  const warnings = new Map<string, IssueCount>();
  const summary: CheckSummary = {
    input: inputPath, mapping: mapping.path, format: reader.format, rows: 0, valid: 0, invalid: 0, unreadable: 0,
    rowsWithWarnings: 0, warnings: 0, interrupted: false, durationMs: 0, topErrors: [], topWarnings: [], invalidRows: [],
  };
  try {
    if (reader.columns !== null) mapping.checkColumns(reader.columns);
    for await (const item of reader) {
      if (options.signal?.aborted === true) {
        summary.interrupted = true;
        break;
      }
      summary.rows += 1;
      if (item.kind === 'error') {
        summary.invalid += 1;
        summary.unreadable += 1;
        const issue: RowIssue = { path: '(input)', message: item.message, columns: [] };
        tally(errors, issue, item.rowNumber);
        if (summary.invalidRows.length < keep) {
          summary.invalidRows.push({ row: item.rowNumber, line: item.line, messages: [formatRowIssue(item.rowNumber, issue)], issues: [issue] });
        }
        continue;
      }
      const mapped = mapping.mapRow(item.record, item.rowNumber);
      if (mapped.warnings.length > 0) {
        summary.rowsWithWarnings += 1;
        summary.warnings += mapped.warnings.length;
        for (const warning of mapped.warnings) tally(warnings, warning, item.rowNumber);
      }
      if (mapped.errors.length === 0) {
        summary.valid += 1;
        continue;
      }
      summary.invalid += 1;
      for (const error of mapped.errors) tally(errors, error, item.rowNumber);
      if (summary.invalidRows.length < keep) {
        summary.invalidRows.push({
          row: item.rowNumber,
          line: item.line,
          messages: mapped.errors.map((issue) => formatRowIssue(item.rowNumber, issue)),
          issues: mapped.errors,
        });
      }
    }
    // The reader also stops on the signal where no row comes (a long run of blank lines).
    if (options.signal?.aborted === true) summary.interrupted = true;
  } finally {
    await reader.close();
  }
  summary.durationMs = Math.round(performance.now() - started);
  summary.topErrors = rank(errors);
  summary.topWarnings = rank(warnings);
  return summary;
}

function tally(counts: Map<string, IssueCount>, issue: RowIssue, row: number): void {
  const path = issue.path.replace(INDEX, '[]');
  // Messages that quote the value would make every row its own group: group by the message's head.
  const message = issue.path === '(input)' ? issue.message.replace(/^line \d+: /, '') : issue.message.replace(/, got ".*"$/, '');
  const key = `${path}\u0000${message}`;
  let count = counts.get(key);
  if (count === undefined) {
    count = { path, message, columns: [], count: 0, rows: [] };
    counts.set(key, count);
  }
  count.count += 1;
  if (count.rows.length < 5) count.rows.push(row);
  for (const column of issue.columns) if (count.columns.length < 8 && !count.columns.includes(column)) count.columns.push(column);
}

function rank(counts: Map<string, IssueCount>): IssueCount[] {
  return [...counts.values()].sort((a, b) => b.count - a.count || (a.rows[0] ?? 0) - (b.rows[0] ?? 0)).slice(0, 10);
}
