/**
 * `quote-batch export --format source`: the rows of the chosen states as the lead source wrote
 * them — the input's own header, column order, delimiter, quoting and bytes (NDJSON: its own line)
 * — with `qb_state`, `qb_error_code` and `qb_error_message` appended, for ops to fix in their own
 * tools and feed back (what Salesforce Data Loader's error file gives).
 *
 * Each row's record is copied from the input by the position the run recorded (`rows.source_offset`),
 * up to the next row's position. The input is read once, front to back (decompressed on the fly for
 * .gz); the ledger's rows are streamed in row order: memory holds one record at a time.
 */
import { isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type Database from 'better-sqlite3';
import { QuoteBatchError } from '../errors.js';
import { DEFAULT_MAX_RECORD_BYTES, openInput, type InputFormat, type InputOptions } from '../input/index.js';
import type { RowState } from '../ledger/index.js';
import { formatCsvCell } from './csv.js';

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
}

export interface SourceExportOptions {
  jobId: number;
  /** Only rows in these states; every row when empty. */
  states: readonly RowState[];
  input: SourceInput;
}

/** Bytes gathered before each `write`: few syscalls, bounded memory. */
const CHUNK_BYTES = 64 * 1024;
const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const SPACE = 0x20;
const TAB = 0x09;
const CLOSE_BRACE = 0x7d;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const CRLF = Buffer.from([CR, LF]);

interface LedgerRow {
  row_number: number;
  source_offset: number | null;
  source_line: number | null;
  state: RowState;
  error_code: string | null;
  error_message: string | null;
}

/**
 * Writes the header (CSV) and the selected rows through `write`, in row order. Throws `E_INPUT`
 * when the input ends before a recorded position. The caller checks first that every selected row
 * has a recorded position ({@link checkSourcePositions}) and that the input is the file the job
 * read (its SHA-256). Returns the rows written.
 */
export async function exportSourceRows(db: Database.Database, options: SourceExportOptions, write: (chunk: Buffer) => void | Promise<void>): Promise<number> {
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
    let pending: LedgerRow | undefined;
    const flush = async (next: LedgerRow | undefined): Promise<void> => {
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
    const rows = db.prepare(
      `SELECT row_number, source_offset, source_line, state, error_code, error_message FROM rows WHERE job_id = ? ORDER BY row_number`,
    );
    for (const row of rows.iterate(options.jobId) as IterableIterator<LedgerRow>) {
      await flush(row);
      if (selected.size === 0 || selected.has(row.state)) pending = row;
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
export function checkSourcePositions(db: Database.Database, jobId: number, states: readonly RowState[]): void {
  const where = states.length === 0 ? '' : ` AND state IN (${states.map(() => '?').join(', ')})`;
  const missing = db.prepare(`SELECT COUNT(*) FROM rows WHERE job_id = ? AND source_offset IS NULL${where}`).pluck().get(jobId, ...states) as number;
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
async function csvRecordEnd(input: SourceInput, row: LedgerRow): Promise<number | undefined> {
  const options: InputOptions = { format: input.format, delimiter: input.delimiter, rereadRunOnQuotes: input.rereadRunOnQuotes, anyLineEnd: input.anyLineEnd };
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
function csvRecord(record: Buffer | null, row: LedgerRow, delimiter: string, eol: string, fields: number): Buffer {
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
function ndjsonRecord(record: Buffer | null, row: LedgerRow, eol: string): Buffer {
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

/** Gathers chunks into writes of about {@link CHUNK_BYTES}; `written` waits for the last one taken. */
class ChunkedWriter {
  #parts: Buffer[] = [];
  #length = 0;
  #writing: Promise<void>[] = [];

  constructor(private readonly write: (chunk: Buffer) => void | Promise<void>) {}

  async written(): Promise<void> {
    const writing = this.#writing;
    this.#writing = [];
    await Promise.all(writing);
  }

  push(bytes: Buffer): void {
    this.#parts.push(bytes);
    this.#length += bytes.length;
    if (this.#length >= CHUNK_BYTES) this.end();
  }

  end(): void {
    if (this.#length === 0) return;
    const writing = this.write(this.#parts.length === 1 ? (this.#parts[0] as Buffer) : Buffer.concat(this.#parts, this.#length));
    if (writing !== undefined) {
      // Awaited by `written`; a rejection before then (the reader gone) is not an unhandled one.
      writing.catch(() => {});
      this.#writing.push(writing);
    }
    this.#parts = [];
    this.#length = 0;
  }
}

/**
 * Reads a byte stream front to back: skip to a position, read up to another or to a line end.
 * Holds only the chunks not consumed yet: a record's worth (at most `limit` bytes) and a chunk.
 */
class ByteCursor {
  readonly #source: Readable;
  readonly #chunks: AsyncIterator<Buffer>;
  /** Unconsumed chunks, the first from `#head` on; `#position` is the offset of its first unconsumed byte. */
  #buffer: Buffer[] = [];
  #head = 0;
  #available = 0;
  #position = 0;
  #ended = false;

  constructor(source: Readable) {
    this.#source = source;
    this.#chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  close(): void {
    this.#source.destroy();
  }

  /** The next `count` bytes (fewer at the end of the input), not consumed. */
  async peek(count: number): Promise<Buffer> {
    while (this.#available < count && (await this.#fill()));
    return Buffer.concat(this.#buffer).subarray(this.#head, this.#head + Math.min(count, this.#available));
  }

  /** Drops bytes up to `offset`, which may not be behind the position. */
  async seek(offset: number): Promise<void> {
    if (offset < this.#position) throw new QuoteBatchError('E_INPUT', `the ledger's record positions go backwards at byte ${offset}`);
    while (this.#position < offset) {
      if (this.#available === 0 && !(await this.#fill())) {
        throw new QuoteBatchError('E_INPUT', `the input ends before byte ${offset}, where the ledger says a row starts`);
      }
      this.#consume(Math.min(this.#available, offset - this.#position));
    }
  }

  /**
   * The bytes from the position up to `end` (the end of the input when undefined), consumed;
   * null (the bytes skipped all the same) when there are more than `limit`.
   */
  async read(end: number | undefined, limit: number): Promise<Buffer | null> {
    if (end !== undefined && end - this.#position > limit) {
      await this.seek(end);
      return null;
    }
    const want = end === undefined ? Number.POSITIVE_INFINITY : end - this.#position;
    while (this.#available < want && this.#available <= limit && (await this.#fill()));
    if (this.#available > limit && end === undefined) {
      while (this.#available > 0 || (await this.#fill())) this.#consume(this.#available);
      return null;
    }
    return this.#take(Math.min(want, this.#available));
  }

  /** One line without its line end, consumed with it (`crlf` when that was CR LF); null bytes past `limit`. */
  async readLine(limit: number): Promise<{ bytes: Buffer | null; crlf: boolean }> {
    let searched = 0;
    let found = -1;
    while (found < 0) {
      found = this.#indexOf(LF, searched);
      if (found >= 0) break;
      searched = this.#available;
      if (searched > limit) {
        // Too long to hold: skip to the line's end.
        for (;;) {
          const lf = this.#indexOf(LF, 0);
          if (lf >= 0) {
            this.#consume(lf + 1);
            return { bytes: null, crlf: false };
          }
          this.#consume(this.#available);
          if (!(await this.#fill())) return { bytes: null, crlf: false };
        }
      }
      if (!(await this.#fill())) break;
    }
    const bytes = this.#take(found < 0 ? this.#available : found);
    if (found >= 0) this.#consume(1);
    const crlf = bytes[bytes.length - 1] === CR;
    return { bytes: crlf ? bytes.subarray(0, -1) : bytes, crlf };
  }

  /**
   * Looks ahead from the position, without consuming, for the first byte at which `stop` returns
   * the length of a line end; the offset after that line end and its length, or undefined when
   * the input ends first or `limit` bytes hold none. Byte by byte: for short texts (a header).
   */
  async scan(stop: (byte: number, next: number | undefined) => number, limit: number): Promise<{ position: number; eol: number } | undefined> {
    for (let offset = 0; offset <= limit; offset += 1) {
      while (this.#available <= offset + 1 && (await this.#fill()));
      if (offset >= this.#available) return undefined;
      const length = stop(this.#byteAt(offset), offset + 1 < this.#available ? this.#byteAt(offset + 1) : undefined);
      if (length > 0) return { position: this.#position + offset + length, eol: length };
    }
    return undefined;
  }

  #byteAt(offset: number): number {
    let i = offset + this.#head;
    for (const chunk of this.#buffer) {
      if (i < chunk.length) return chunk[i] as number;
      i -= chunk.length;
    }
    throw new RangeError(`offset ${offset} is past the buffer`);
  }

  /** Offset (from the position) of the first `byte` at or after `from`, or -1. */
  #indexOf(byte: number, from: number): number {
    let base = -this.#head;
    for (const chunk of this.#buffer) {
      const start = Math.max(0, from - base);
      if (start < chunk.length) {
        const i = chunk.indexOf(byte, start);
        if (i >= 0) return base + i;
      }
      base += chunk.length;
    }
    return -1;
  }

  /** The next `count` bytes (a view when they lie in one chunk), consumed. */
  #take(count: number): Buffer {
    const first = this.#buffer[0];
    if (first !== undefined && this.#head + count <= first.length) {
      const view = first.subarray(this.#head, this.#head + count);
      this.#consume(count);
      return view;
    }
    const parts: Buffer[] = [];
    let left = count;
    while (left > 0) {
      const chunk = this.#buffer[0] as Buffer;
      const take = Math.min(chunk.length - this.#head, left);
      parts.push(chunk.subarray(this.#head, this.#head + take));
      this.#consume(take);
      left -= take;
    }
    return Buffer.concat(parts, count);
  }

  #consume(count: number): void {
    let left = count;
    this.#position += count;
    this.#available -= count;
    while (left > 0) {
      const first = this.#buffer[0] as Buffer;
      const rest = first.length - this.#head;
      if (left < rest) {
        this.#head += left;
        return;
      }
      left -= rest;
      this.#buffer.shift();
      this.#head = 0;
    }
  }

  async #fill(): Promise<boolean> {
    if (this.#ended) return false;
    const next = await this.#chunks.next();
    if (next.done === true) {
      this.#ended = true;
      return false;
    }
    this.#buffer.push(next.value);
    this.#available += next.value.length;
    return true;
  }
}
