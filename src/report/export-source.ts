/**
 * `quote-batch export --format source`: the rows of the chosen states as the lead source wrote
 * them — the input's own header, column order, delimiter, quoting and bytes (NDJSON: its own line)
 * — with `qb_state`, `qb_error_code` and `qb_error_message` appended, for ops to fix in their own
 * tools and feed back (what Salesforce Data Loader's error file gives).
 *
 * Each row's record is copied from the input by the position the run recorded (`rows.source_offset`),
 * up to the next row's position. The input is read once, front to back (decompressed on the fly for
 * .gz); the ledger's rows come in row order, a batch at a time: memory holds one record and one batch.
 */
import { isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { QuoteBatchError } from '../errors.js';
import { DEFAULT_MAX_RECORD_BYTES, openInput, type InputFormat, type InputOptions } from '../input/index.js';
import { countRowsWithoutPosition, sourceRowBatches, type RowState, type SourceRow, type SqlDb } from '../ledger/index.js';
import { formatCsvCell } from './csv.js';
import { ByteCursor, ChunkedWriter, CHUNK_BYTES } from './_byte-io.js';

/** The columns (NDJSON: keys) appended to each exported record. */
export const SOURCE_EXPORT_COLUMNS = ['qb_state', 'qb_error_code', 'qb_error_message'] as const;

/** Where and how to read the job's input (as the run read it). */
export interface SourceInput {
  path: string;
  format: InputFormat;
  gzip: boolean;
  /** CSV delimiter (the mapping's, else `,`; tab for .tsv). */
  delimiter: string;
  /** As the job reads its input (`jobs.input_reader`; see `InputOptions.rereadRunOnQuotes`); default true. */
  rereadRunOnQuotes?: boolean;
  /** As the job reads its input (`jobs.input_reader`; see `InputOptions.anyLineEnd`); default true. */
  anyLineEnd?: boolean;
  /** As the job reads its input (`jobs.input_reader`; see `InputOptions.crCrLf`); default true. */
  crCrLf?: boolean;
}

export interface SourceExportOptions {
  jobId: number;
  /** Only rows in these states; every row when empty. */
  states: readonly RowState[];
  input: SourceInput;
}

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const SPACE = 0x20;
const TAB = 0x09;
const CLOSE_BRACE = 0x7d;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const CRLF = Buffer.from([CR, LF]);

/**
 * Writes the header (CSV) and the selected rows through `write`, in row order. Throws `E_INPUT`
 * when the input ends before a recorded position. The caller checks first that every selected row
 * has a recorded position ({@link checkSourcePositions}) and that the input is the file the job
 * read (its SHA-256). Returns the rows written.
 */
export async function exportSourceRows(db: SqlDb, options: SourceExportOptions, write: (chunk: Buffer) => void | Promise<void>): Promise<number> {
  const { input } = options;
  const csv = input.format !== 'ndjson';
  const selected = new Set(options.states);
  const cursor = new ByteCursor(openBytes(input));
  const out = new ChunkedWriter(write);
  let count = 0;
  try {
    let eol = '\n';
    let fields = 0;
    // An input that is itself such an export (fixed and fed back) has the three columns last:
    // they are replaced, not added again (a header naming a column twice cannot be read).
    let replaced = false;
    if (!csv && (await cursor.peek(3)).equals(BOM)) out.push(BOM); // the file's, not its first line's
    if (csv) {
      const header = await readHeader(cursor, input.path);
      eol = header.eol;
      const starts = fieldStarts(header.bytes, input.delimiter);
      fields = starts.length;
      replaced = endsWithExportColumns(header.bytes, starts, input.delimiter);
      out.push(replaced ? header.bytes.subarray(0, (starts.at(-SOURCE_EXPORT_COLUMNS.length) as number) - input.delimiter.length) : header.bytes);
      out.push(Buffer.from(`${SOURCE_EXPORT_COLUMNS.map((c) => input.delimiter + c).join('')}${eol}`));
    }
    // Every row of the job in row order, so the one after a selected row (where its record ends) is at hand.
    let pending: SourceRow | undefined;
    const flush = async (next: SourceRow | undefined): Promise<void> => {
      const row = pending;
      pending = undefined;
      if (row === undefined) return;
      const start = row.source_offset as number;
      await cursor.seek(start);
      let record: Buffer | null;
      let terminator: string;
      if (csv) {
        const end = next !== undefined && next.row_number === row.row_number + 1 && next.source_offset !== null
          ? next.source_offset
          : await csvRecordEnd(input, row);
        record = await cursor.read(end, DEFAULT_MAX_RECORD_BYTES);
        terminator = eol;
      } else {
        const line = await cursor.readLine(DEFAULT_MAX_RECORD_BYTES);
        record = line.bytes;
        terminator = line.crlf ? '\r\n' : '\n';
      }
      if (record !== null && start === 0 && !csv && record.subarray(0, 3).equals(BOM)) record = record.subarray(3);
      if (csv && replaced && record !== null) record = withoutExportCells(record, input.delimiter, fields);
      out.push(csv ? csvRecord(record, row, input.delimiter, eol, fields - (replaced ? SOURCE_EXPORT_COLUMNS.length : 0)) : ndjsonRecord(record, row, terminator));
      count += 1;
      await out.written();
    };
    // In batches: no read stays open while the input is read or a slow reader holds a chunk back.
    for await (const batch of sourceRowBatches(db, options.jobId)) {
      for (const row of batch) {
        await flush(row);
        if (selected.size === 0 || selected.has(row.state)) pending = row;
      }
    }
    await flush(undefined);
    out.end();
    await out.written();
  } finally {
    cursor.close();
  }
  return count;
}

/**
 * Throws `QuoteBatchError('E_USAGE')` when rows to export have no recorded position in the input
 * (a ledger written by a quote-batch that did not record them): they cannot be copied from it.
 */
export async function checkSourcePositions(db: SqlDb, jobId: number, states: readonly RowState[]): Promise<void> {
  const missing = await countRowsWithoutPosition(db, jobId, states);
  if (missing > 0) {
    throw new QuoteBatchError('E_USAGE', `${missing} of the rows to export from job ${jobId} have no recorded position in the input (a ledger written before quote-batch recorded them), so they cannot be copied from it`, {
      hint: 'export their outcomes with --format csv, or run the job again with --fresh to record positions',
    });
  }
}

function openBytes(input: SourceInput): Readable {
  const file = createReadStream(input.path, { highWaterMark: CHUNK_BYTES });
  return input.gzip ? pipeline(file, createGunzip(), () => {}) : file;
}

/**
 * Where the record of the last row the ledger has (or of a row whose next one it lacks) ends: the
 * offset of the record after it, as the reader finds it; undefined at the end of the input.
 */
async function csvRecordEnd(input: SourceInput, row: SourceRow): Promise<number | undefined> {
  const options: InputOptions = { format: input.format, delimiter: input.delimiter, rereadRunOnQuotes: input.rereadRunOnQuotes, anyLineEnd: input.anyLineEnd, crCrLf: input.crCrLf };
  const reader = await openInput(input.path, {
    ...options, start: { offset: row.source_offset as number, rowNumber: row.row_number, line: row.source_line ?? 2 },
  });
  try {
    let seen = 0;
    for await (const item of reader) {
      if (++seen === 2) return item.offset;
    }
    return undefined;
  } finally {
    await reader.close();
  }
}

/**
 * The CSV header's bytes as they are (a BOM kept) without its line end, and that line end: LF,
 * CR LF, a lone CR, or CR CR LF (a file converted to CR LF twice, which the reader accepts too).
 */
async function readHeader(cursor: ByteCursor, path: string): Promise<{ bytes: Buffer; eol: string }> {
  let quoted = false;
  const end = await cursor.scan((byte, next) => {
    if (byte === QUOTE) quoted = !quoted;
    else if (!quoted && (byte === LF || byte === CR)) return byte === CR && next === LF ? 2 : 1;
    return 0;
  }, DEFAULT_MAX_RECORD_BYTES);
  if (end === undefined) throw new QuoteBatchError('E_INPUT', `cannot read the header of input file ${path}`);
  const bytes = (await cursor.read(end.position, DEFAULT_MAX_RECORD_BYTES)) ?? Buffer.alloc(0);
  const eol = end.eol === 2 ? '\r\n' : bytes[bytes.length - 1] === CR ? '\r' : '\n';
  if (eol === '\r' && (await cursor.peek(2)).equals(CRLF)) {
    await cursor.read(end.position + 2, 2);
    return { bytes: bytes.subarray(0, bytes.length - 1), eol: '\r\r\n' };
  }
  return { bytes: bytes.subarray(0, bytes.length - eol.length), eol };
}

/** Where each field of a CSV line starts: 0, and just past each delimiter outside quotes. */
function fieldStarts(line: Buffer, delimiter: string): number[] {
  const separator = Buffer.from(delimiter);
  let quoted = false;
  const starts = [0];
  for (let i = 0; i < line.length; i += 1) {
    if (line[i] === QUOTE) quoted = !quoted;
    else if (!quoted && line[i] === separator[0] && line.subarray(i, i + separator.length).equals(separator)) {
      starts.push(i + separator.length);
      i += separator.length - 1;
    }
  }
  return starts;
}

/** Whether a CSV header's last fields are {@link SOURCE_EXPORT_COLUMNS}, unquoted, as an export writes them. */
function endsWithExportColumns(header: Buffer, starts: readonly number[], delimiter: string): boolean {
  const n = SOURCE_EXPORT_COLUMNS.length;
  if (starts.length <= n) return false;
  const tail = header.subarray((starts.at(-n) as number) - delimiter.length).toString('utf8');
  return tail === SOURCE_EXPORT_COLUMNS.map((c) => delimiter + c).join('');
}

/**
 * A CSV record of `fields` fields without its last three (an earlier export's cells); a record
 * with another number of fields (an unreadable row) is kept whole.
 */
function withoutExportCells(record: Buffer, delimiter: string, fields: number): Buffer {
  const starts = fieldStarts(withoutLineEnds(record), delimiter);
  if (starts.length !== fields) return record;
  return record.subarray(0, (starts.at(-SOURCE_EXPORT_COLUMNS.length) as number) - delimiter.length);
}

/**
 * A CSV record without its line end(s), the three cells appended with the input's delimiter. A
 * record too long to copy (null) becomes `fields` empty cells, so the three land in their columns.
 */
function csvRecord(record: Buffer | null, row: SourceRow, delimiter: string, eol: string, fields: number): Buffer {
  const cells = [row.state, row.error_code, row.error_message].map((v) => delimiter + formatCsvCell(v, delimiter)).join('');
  if (record === null) return Buffer.from(`${delimiter.repeat(fields - 1)}${cells}${eol}`);
  return Buffer.concat([withoutLineEnds(record), Buffer.from(`${cells}${eol}`)]);
}

/** `record` without the line end(s) it ends with. */
function withoutLineEnds(record: Buffer): Buffer {
  let end = record.length;
  while (end > 0 && (record[end - 1] === LF || record[end - 1] === CR)) end -= 1;
  return record.subarray(0, end);
}

/**
 * An NDJSON line with the three keys added at the end of its object: its bytes up to the closing
 * `}` kept as they are (invalid UTF-8 included). A line that is not a JSON object (an unreadable
 * row) becomes an object holding it: `qb_line` its text when it is valid UTF-8, else
 * `qb_line_base64` its bytes; a line too long to copy, `"qb_line": null`.
 */
function ndjsonRecord(record: Buffer | null, row: SourceRow, eol: string): Buffer {
  const added = `"qb_state":${JSON.stringify(row.state)},"qb_error_code":${JSON.stringify(row.error_code)},"qb_error_message":${JSON.stringify(row.error_message)}}${eol}`;
  if (record === null) return Buffer.from(`{"qb_line":null,${added}`);
  const earlier = earlierExport(record);
  if (earlier !== undefined) {
    // A line of an earlier export, fed back: its three keys get the new values (the line is written
    // anew, not byte for byte), rather than a second copy of each.
    const values: Record<string, unknown> = { state: row.state, error_code: row.error_code, error_message: row.error_message };
    for (const key of SOURCE_EXPORT_COLUMNS) earlier[key] = values[key.slice(3)];
    return Buffer.from(`${JSON.stringify(earlier)}${eol}`);
  }
  const keys = objectKeyCount(record);
  if (keys !== undefined) {
    // Parsed as an object: its last byte but JSON white space is its closing brace.
    let close = record.length - 1;
    while (record[close] !== CLOSE_BRACE) close -= 1;
    let head = close;
    while (head > 0 && isJsonSpace(record[head - 1])) head -= 1;
    return Buffer.concat([record.subarray(0, head), Buffer.from(`${keys === 0 ? '' : ','}${added}`)]);
  }
  const line = isUtf8(record) ? `"qb_line":${JSON.stringify(record.toString('utf8'))}` : `"qb_line_base64":"${record.toString('base64')}"`;
  return Buffer.from(`{${line},${added}`);
}

/** `record` parsed, when it is a JSON object holding a key of {@link SOURCE_EXPORT_COLUMNS}; else undefined. */
function earlierExport(record: Buffer): Record<string, unknown> | undefined {
  if (!record.includes('"qb_state"') && !record.includes('"qb_error_code"') && !record.includes('"qb_error_message"')) return undefined;
  try {
    const parsed: unknown = JSON.parse(record.toString('utf8'));
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    return SOURCE_EXPORT_COLUMNS.some((key) => Object.hasOwn(parsed, key)) ? parsed as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

/** The number of keys when `record` is a JSON object (invalid UTF-8 inside its strings allowed), else undefined. */
function objectKeyCount(record: Buffer): number | undefined {
  try {
    // Invalid bytes decode as U+FFFD, which leaves the JSON's structure as it is.
    const parsed: unknown = JSON.parse(record.toString('utf8'));
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.keys(parsed).length : undefined;
  } catch {
    return undefined;
  }
}

function isJsonSpace(byte: number | undefined): boolean {
  return byte === SPACE || byte === TAB || byte === LF || byte === CR;
}
