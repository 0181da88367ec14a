/**
 * The offline check of a whole input file: read, map and validate every row, send nothing.
 * Used by `quote-batch check`. The rows are not kept: counts, groups and the first invalid rows
 * are, and a 12-byte fingerprint per valid row's key, to find repeated keys (see _row-keys.ts).
 */
import { ErrorGroups, type ErrorGroup, type ErrorKindInput } from '../error-groups.js';
import { openInput } from '../input/index.js';
import { CoverageTally, type CoverageReport } from './coverage.js';
import { formatRowIssue } from './format.js';
import { resolveInputOptions } from './input-options.js';
import { RowKeySet } from './_row-keys.js';
import type { CompiledMapping, MappedRow, RowIssue } from './types.js';

export interface CheckOptions {
  /** Invalid rows kept with their messages (the rest are only counted). Default 20. */
  keepInvalidRows?: number;
  /** Repeated row keys kept with their rows (the rest are only counted). Default 20. */
  keepDuplicates?: number;
  /** Sample rows kept per error group. Default 5. */
  samplesPerGroup?: number;
  /** Also work out the columns never read and the request fields never filled. */
  coverage?: boolean;
  /** Stops reading when aborted (the summary then covers the rows read). */
  signal?: AbortSignal;
}

export interface InvalidRow {
  row: number;
  line: number;
  /** One formatted line per issue (see formatRowIssue). */
  messages: string[];
  issues: RowIssue[];
}

/** A row whose key an earlier row already had: the run records it `duplicate` and does not send it. */
export interface RepeatedKey {
  row: number;
  line: number;
  key: string;
  /** The row that had the key first. */
  firstRow: number;
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
  /** Valid rows whose key repeats an earlier valid row's (counted in `valid` too). */
  duplicates: number;
  rowsWithWarnings: number;
  warnings: number;
  /** True when the check stopped early (Ctrl-C). */
  interrupted: boolean;
  durationMs: number;
  /**
   * Invalid rows grouped by kind (src/error-groups.ts), largest first: a row is counted under each
   * of its problems, once per kind, so a group's count is the rows it affects. The same groups the
   * run summary and `report` show for the same rows.
   */
  errorGroups: ErrorGroup[];
  /** Warnings grouped the same way: rows affected per kind. */
  warningGroups: ErrorGroup[];
  /** The first rows with a repeated key (see {@link CheckOptions.keepDuplicates}). */
  repeatedKeys: RepeatedKey[];
  /** The first invalid rows (see {@link CheckOptions.keepInvalidRows}). */
  invalidRows: InvalidRow[];
  /** With {@link CheckOptions.coverage}. */
  coverage?: CoverageReport;
}

/**
 * What the run records for an invalid row (state, error code, message), so that `check` groups
 * rows exactly as the run summary and `report` do.
 */
function invalidRowKind(mapped: Pick<MappedRow, 'rowNumber' | 'errors'>): ErrorKindInput {
  return { state: 'invalid', errorCode: 'mapping_error', message: mapped.errors.map((issue) => formatRowIssue(mapped.rowNumber, issue)).join('; ') };
}

/** What the run records for a row that could not be read. */
function unreadableRowKind(message: string): ErrorKindInput {
  return { state: 'invalid', errorCode: 'unreadable_row', message };
}

/** Rows read before the file's row count is estimated (the reader reads ahead in 64 KiB chunks). */
const RESERVE_AFTER_ROWS = 4096;

/** Checks every row of `inputPath`; throws E_INPUT/E_MAPPING before the first row when the file or header is unusable. */
export async function checkInput(inputPath: string, mapping: CompiledMapping, options: CheckOptions = {}): Promise<CheckSummary> {
  const keep = options.keepInvalidRows ?? 20;
  const keepDuplicates = options.keepDuplicates ?? 20;
  const started = performance.now();
  const reader = await openInput(inputPath, { ...resolveInputOptions(inputPath, mapping), signal: options.signal });
  const errors = new ErrorGroups({ samples: options.samplesPerGroup ?? 5 });
  const warnings = new ErrorGroups({ samples: options.samplesPerGroup ?? 5 });
  const keys = new RowKeySet();
  const coverage = options.coverage === true ? new CoverageTally(mapping) : undefined;
  const summary: CheckSummary = {
    input: inputPath, mapping: mapping.path, format: reader.format, rows: 0, valid: 0, invalid: 0, unreadable: 0, duplicates: 0,
    rowsWithWarnings: 0, warnings: 0, interrupted: false, durationMs: 0, errorGroups: [], warningGroups: [], repeatedKeys: [], invalidRows: [],
  };
  try {
    if (reader.columns !== null) mapping.checkColumns(reader.columns);
    coverage?.start(reader.columns);
    // The reader watches the signal: it yields no row once it is raised.
    for await (const item of reader) {
      summary.rows += 1;
      // Size the key table once, from the share of the file these rows took (see RowKeySet).
      if (summary.rows === RESERVE_AFTER_ROWS && reader.bytesRead > 0) {
        keys.reserve(Math.ceil((RESERVE_AFTER_ROWS * reader.totalBytes * 1.05) / reader.bytesRead));
      }
      if (item.kind === 'error') {
        summary.invalid += 1;
        summary.unreadable += 1;
        errors.add(unreadableRowKind(item.message), item.rowNumber);
        if (summary.invalidRows.length < keep) {
          const issue: RowIssue = { path: '(input)', message: item.message, columns: [] };
          summary.invalidRows.push({ row: item.rowNumber, line: item.line, messages: [formatRowIssue(item.rowNumber, issue)], issues: [issue] });
        }
        continue;
      }
      coverage?.addRecord(item.record);
      const mapped = mapping.mapRow(item.record, item.rowNumber);
      coverage?.addRequest(mapped.request);
      if (mapped.warnings.length > 0) {
        summary.rowsWithWarnings += 1;
        summary.warnings += mapped.warnings.length;
        for (const warning of mapped.warnings) {
          warnings.add({ state: 'warning', errorCode: null, message: formatRowIssue(item.rowNumber, warning) }, item.rowNumber);
        }
      }
      if (mapped.errors.length === 0) {
        summary.valid += 1;
        // Only valid rows take a key, as in the run: an invalid row is never sent.
        const firstRow = keys.add(mapped.rowKey, item.rowNumber);
        if (firstRow !== 0) {
          summary.duplicates += 1;
          if (summary.repeatedKeys.length < keepDuplicates) {
            summary.repeatedKeys.push({ row: item.rowNumber, line: item.line, key: mapped.rowKey, firstRow });
          }
        }
        continue;
      }
      summary.invalid += 1;
      errors.add(invalidRowKind(mapped), item.rowNumber);
      if (summary.invalidRows.length < keep) {
        summary.invalidRows.push({
          row: item.rowNumber,
          line: item.line,
          messages: mapped.errors.map((issue) => formatRowIssue(item.rowNumber, issue)),
          issues: mapped.errors,
        });
      }
    }
    // A reader stopped by the signal ends as if the file ended (also inside a long run of blank lines).
    if (options.signal?.aborted === true) summary.interrupted = true;
  } finally {
    await reader.close();
  }
  summary.durationMs = Math.round(performance.now() - started);
  summary.errorGroups = errors.top();
  summary.warningGroups = warnings.top();
  if (coverage !== undefined) summary.coverage = coverage.report();
  return summary;
}
