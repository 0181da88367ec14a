import { Parser } from 'csv-parse';
import type { CsvError, Options } from 'csv-parse';
import { QuoteBatchError } from '../errors.js';
import type { Decoder } from './_decoder.js';
import { makeRecordBuilder } from './_csv-record.js';
import { LineBreakIndex } from './_line-index.js';
import { Utf8Scanner } from './_utf8.js';
import type { InputItem, InputStart } from './types.js';

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
/** Bytes fed to csv-parse at a time: bounds how far past the size limit a record can grow. */
const SLICE_BYTES = 64 * 1024;
/** csv-parse holds back at most a few bytes (delimiter look-ahead); no record can end further back. */
const LOOKAHEAD_MARGIN = 1024;
const EMPTY = Buffer.alloc(0);
/** The record delimiters of a file read with `anyLineEnd` whose header ends with LF or CRLF (the only case of more than one). */
const ANY_LINE_END: readonly string[] = ['\r\n', '\n'];
/** The same with `crCrLf`, whose header may end with CR CR LF too: the longest first (csv-parse takes the first that matches). */
const ANY_LINE_END_CRCRLF: readonly string[] = ['\r\r\n', '\r\n', '\n'];

/**
 * The synchronous engine inside csv-parse's stream `Parser` (`parser.api` in csv-parse 5 and 6).
 * Driving it directly lets the reader see where each record ends (byte offset), nudge it past a
 * bad quote, and replace it after an over-long record, all without buffering ahead.
 */
interface CsvEngine {
  readonly info: { readonly bytes: number; readonly empty_lines: number };
  readonly state: { recordHasError: boolean; quoting: boolean; previousBuf: Buffer | undefined; field?: FieldBuffer };
  readonly options: { readonly record_delimiter: readonly Buffer[] };
  parse(
    buf: Buffer | undefined,
    end: boolean,
    push: (record: string[]) => void,
    close: () => void,
  ): Error | undefined;
}

/** csv-parse's `ResizeableBuffer`, where the engine collects the bytes of the field being read. */
interface FieldBuffer {
  buf: Buffer;
  length: number;
  toString(encoding?: BufferEncoding | null): string | Uint8Array;
}

/**
 * Decodes a field the way csv-parse's own `toString` does, without its intermediate `Buffer` view
 * (`buf.slice(0, length)`, one object per field): `Buffer#toString(encoding, start, end)` decodes
 * the range directly. Same strings, about a tenth less CPU on a wide file and less garbage.
 */
function decodeFieldWithoutView(field: FieldBuffer): void {
  const original = field.toString.bind(field);
  field.toString = function toString(this: FieldBuffer, encoding?: BufferEncoding | null) {
    return encoding ? this.buf.toString(encoding, 0, this.length) : original(encoding);
  };
}

/** Options of {@link CsvDecoder}. */
export interface CsvDecoderOptions {
  /** Names the file in messages. */
  label: string;
  delimiter: string;
  maxRecordBytes: number;
  /**
   * LF and CRLF both end a record, whichever the header line ends with (a header typed on Windows
   * before rows exported elsewhere). False: the header's line end only (jobs begun before).
   */
  anyLineEnd?: boolean;
  /** With `anyLineEnd`: CR CR LF ends a record too (see `InputOptions.crCrLf`). */
  crCrLf?: boolean;
}

/** How a record whose quote was never closed ends, in its message; the reader may say otherwise (see `open.ts`). */
export const RUNS_TO_END = 'the record runs to the end of the file';

/**
 * Reads CSV with csv-parse, one {@link InputItem} per record. Record errors are data: bad quoting,
 * a wrong field count, invalid UTF-8 and an over-long record each become an error item and the
 * next record is read. csv-parse decides where records end; this class adds line numbers (its own
 * count: csv-parse counts CRLF inside quotes twice), the UTF-8 check and the size limit.
 *
 * Recovery, exactly: an invalid closing quote (`"ab"c,`) ends quoting there, so the record ends at
 * its line end; a stray quote in an unquoted field (`ab"c`) is an error for that record only; a
 * quote opened and never closed makes the rest of the file one record, reported as one error when
 * the file ends, or, once it passes `maxRecordBytes`, as "record longer than" with reading resumed
 * on the next line (which may be inside the runaway quoted text, and then reads as its own rows).
 * A record whose bad quote ran on past its first line (an invalid closing quote lines later, or
 * none before the end of the file) is flagged `quoteRanOn`: the reader reads the lines after its
 * first line again, as rows (see `open.ts`).
 * The size limit is checked after each slice of at most 64 KiB, so an over-long record is held to
 * at most `maxRecordBytes` + 64 KiB, and reading resumes after the first line end past the slice
 * where the limit was noticed: the same place on every read of the same file.
 */
export class CsvDecoder implements Decoder {
  columns: string[] | null = null;
  readonly #options: CsvDecoderOptions;
  readonly #label: string;
  readonly #delimiter: string;
  readonly #max: number;
  readonly #utf8 = new Utf8Scanner();
  #lines = new LineBreakIndex();
  #engine: CsvEngine;
  /** Absolute offset of the engine's first byte (it restarts after an over-long record). */
  #engineBase = 0;
  /** Absolute offset just past the bytes scanned so far. */
  #scanned = 0;
  /** Absolute offset just past the last record that ended, and the line breaks before it. */
  #prevEnd = 0;
  #breaksBeforePrevEnd = 0;
  /** Absolute offset just past the header (after its line end). */
  #headerEnd = -1;
  /** The engine's count of skipped blank lines when that record ended. */
  #emptyAtPrevEnd = 0;
  #rowNumber = 0;
  /** The first quoting error of the record being parsed. */
  #quoteError: CsvError | undefined;
  /** Discarding the rest of an over-long record up to the next line break. */
  #skipping = false;
  /** That line break was a CR ending a chunk: resume with the next chunk (after its LF, if any). */
  #skippedCr = false;
  /** Line delimiter of the file (found before or by csv-parse), given to every engine that knows it. */
  #recordDelimiter: string[] | undefined;
  /** The chunks of the first line while its line end is not yet seen; undefined after. */
  #firstLine: Buffer[] | undefined = [];
  #firstLineBytes = 0;
  /** Offset of the first line's first CR or LF in those chunks, once seen. */
  #firstBreak = -1;
  #toRecord: (values: string[]) => Record<string, unknown> = () => ({});
  /** The piece being parsed, its absolute offset, and the last bytes before it (see {@link #byteAt}). */
  #piece: Buffer = EMPTY;
  #pieceStart = 0;
  #beforePiece: Buffer = EMPTY;
  #out: InputItem[] = [];
  readonly #onRecordBound = (values: string[]): void => this.#onRecord(values);

  constructor(options: CsvDecoderOptions) {
    this.#options = options;
    this.#label = options.label;
    this.#delimiter = options.delimiter;
    this.#max = options.maxRecordBytes;
    this.#engine = this.#createEngine(true);
  }

  /** Offset just past the header line(s): no record starts before it. -1 until the header is read. */
  get headerEnd(): number {
    return this.#headerEnd;
  }

  /**
   * A decoder of the records from `start` on, fed the file's bytes from `start.offset`: it takes
   * this decoder's header and line delimiter, so this one must have read the header. Items come
   * out as a full read gives them, provided `start` is an item of such a read.
   */
  continueAt(start: InputStart): CsvDecoder {
    const columns = this.columns;
    if (columns === null) throw new Error('CsvDecoder.continueAt needs the header read first');
    const next = new CsvDecoder(this.#options);
    next.columns = columns;
    next.#headerEnd = this.#headerEnd;
    next.#recordDelimiter = this.#recordDelimiter;
    next.#toRecord = this.#toRecord;
    next.#firstLine = undefined;
    next.#lines = new LineBreakIndex(start.line - 1);
    next.#breaksBeforePrevEnd = start.line - 1;
    next.#rowNumber = start.rowNumber - 1;
    next.#scanned = start.offset;
    next.#engine = next.#createEngine(false);
    next.#engineBase = start.offset;
    next.#prevEnd = start.offset;
    return next;
  }

  write(chunk: Buffer, out: InputItem[], checkLimit = true): void {
    this.#out = out;
    if (this.#firstLine !== undefined) {
      this.#holdFirstLine(chunk);
      return;
    }
    if (chunk.length <= SLICE_BYTES) this.#writePiece(chunk, checkLimit);
    else {
      for (let offset = 0; offset < chunk.length; offset += SLICE_BYTES) {
        this.#writePiece(chunk.subarray(offset, offset + SLICE_BYTES));
      }
    }
  }

  end(out: InputItem[]): void {
    this.#out = out;
    if (this.#firstLine !== undefined) this.#releaseFirstLine(Buffer.concat(this.#firstLine));
    this.#utf8.finish();
    this.#lines.finish();
    if (!this.#skipping) this.#parse(undefined, true);
    if (this.columns === null) {
      throw new QuoteBatchError('E_INPUT', `input file ${this.#label} is empty: a CSV file needs a header line`);
    }
  }

  /**
   * Holds the bytes before the first line break, to tell csv-parse the line delimiter: left to
   * guess, it tests every byte of the first line with new buffers, which makes a long first line
   * (say 16 MiB with no line end) take minutes instead of being refused at once.
   */
  #holdFirstLine(chunk: Buffer): void {
    const held = this.#firstLine as Buffer[];
    held.push(chunk);
    const before = this.#firstLineBytes;
    this.#firstLineBytes += chunk.length;
    if (this.#firstBreak === -1) {
      const lf = chunk.indexOf(LF);
      const cr = lf === -1 ? chunk.indexOf(CR) : chunk.subarray(0, lf).indexOf(CR);
      const breakAt = cr === -1 ? lf : cr;
      if (breakAt === -1) {
        if (this.#firstLineBytes > this.#max + 3) {
          throw new QuoteBatchError('E_INPUT', `the header of ${this.#label} (line 1) is longer than ${this.#max} bytes`);
        }
        return;
      }
      this.#firstBreak = before + breakAt;
    }
    // A CR may begin CR LF, or CR CR LF (a CRLF file converted to CRLF again): see two more bytes.
    if (this.#firstLineHeld(this.#firstBreak) === CR && this.#firstLineBytes < this.#firstBreak + 3) return;
    this.#releaseFirstLine(Buffer.concat(held));
  }

  /** The byte at `offset` of the first line's chunks held so far. */
  #firstLineHeld(offset: number): number | undefined {
    let rest = offset;
    for (const piece of this.#firstLine ?? []) {
      if (rest < piece.length) return piece[rest];
      rest -= piece.length;
    }
    return undefined;
  }

  #releaseFirstLine(data: Buffer): void {
    this.#firstLine = undefined;
    const breakAt = indexOfLineEnd(data);
    // A quote before the break may hide it inside a quoted field: then csv-parse guesses after all.
    if (breakAt !== -1 && !data.subarray(0, breakAt).includes(QUOTE)) {
      const doubled = data[breakAt] === CR && data[breakAt + 1] === CR && data[breakAt + 2] === LF;
      const delimiter = doubled ? '\r\r\n' : data[breakAt] === LF ? (data[breakAt - 1] === CR ? '\r\n' : '\n') : '\r';
      this.#recordDelimiter = recordDelimitersFor(delimiter, this.#options);
      this.#engine = this.#createEngine(true);
    }
    for (let offset = 0; offset < data.length; offset += SLICE_BYTES) {
      this.#writePiece(data.subarray(offset, offset + SLICE_BYTES));
    }
  }

  #writePiece(piece: Buffer, checkLimit = true): void {
    const start = this.#scanned;
    this.#beforePiece = this.#piece.length >= 2 ? this.#piece.subarray(this.#piece.length - 2) : Buffer.concat([this.#beforePiece, this.#piece]).subarray(-2);
    this.#piece = piece;
    this.#pieceStart = start;
    const lines = this.#lines;
    lines.countBefore(start - LOOKAHEAD_MARGIN); // forget breaks no record can end before
    lines.add(piece, start);
    this.#utf8.scan(piece, start);
    this.#scanned = start + piece.length;

    let data = piece;
    if (this.#skippedCr) {
      // The skipped line ended with a CR at the end of the last chunk: CRLF or a lone CR. Now that
      // the line index knows which, resume after it.
      this.#skippedCr = false;
      if (data[0] === LF) data = data.subarray(1);
      this.#restart(this.#scanned - data.length);
    }
    while (data.length > 0) {
      if (this.#skipping) {
        const i = indexOfLineEnd(data);
        if (i === -1) return;
        if (i + 1 === data.length && data[i] === CR) {
          this.#skippedCr = true;
          return;
        }
        data = data.subarray(i + 1);
        this.#restart(this.#scanned - data.length);
        continue;
      }
      this.#parse(data, false);
      data = EMPTY;
      if (checkLimit && this.#scanned - this.#pendingStart() > this.#max) {
        this.#reportPendingTooLong();
        // The bytes csv-parse has not looked at yet may hold the line break to resume after.
        const held = this.#engine.state.previousBuf?.length ?? 0;
        data = piece.subarray(piece.length - Math.min(held, piece.length));
        this.#skipping = true;
      }
    }
  }

  #parse(data: Buffer | undefined, end: boolean): void {
    const error = this.#engine.parse(data, end, this.#onRecordBound, noop);
    if (error === undefined) return;
    if (error instanceof QuoteBatchError) throw error;
    throw new QuoteBatchError('E_INPUT', `cannot parse CSV file ${this.#label}: ${error.message}`, { cause: error });
  }

  /** Line of the record being parsed: after the last record and the blank lines since. */
  #pendingLine(): number {
    return 1 + this.#breaksBeforePrevEnd + this.#blankBreaks(this.#engine.info.empty_lines - this.#emptyAtPrevEnd);
  }

  /** Offset of the record being parsed: after the last record and the blank lines since. */
  #pendingStart(): number {
    return this.#recordStart(this.#engine.info.empty_lines - this.#emptyAtPrevEnd);
  }

  /**
   * Line breaks in `blank` blank lines after the last record: one each, but two for a blank CR CR LF
   * (a lone CR, then CR LF) in a file whose lines may end so.
   */
  #blankBreaks(blank: number): number {
    if (blank === 0 || this.#recordDelimiter?.[0] !== '\r\r\n') return blank;
    let index = this.#breaksBeforePrevEnd;
    for (let i = 0; i < blank; i += 1) {
      const lone = this.#lines.isLoneCr(index);
      // Forgotten (thousands of blank lines): counted as one each, as before.
      if (lone === undefined) return index - this.#breaksBeforePrevEnd + (blank - i);
      index += lone ? 2 : 1;
    }
    return index - this.#breaksBeforePrevEnd;
  }

  /**
   * Where a record starts that follows the last one and `blank` blank lines. csv-parse skips a line
   * as blank only when it is nothing but a record delimiter.
   */
  #recordStart(blank: number): number {
    if (blank === 0) return this.#prevEnd;
    if (this.#recordDelimiter !== undefined && (this.#recordDelimiter.length > 1 || this.#recordDelimiter[0] === '\r\r\n')) {
      // Blank lines of any kind (LF, CRLF, CR CR LF): after the last of their breaks. Should the line
      // index have forgotten it (thousands of blank lines), the first blank line's start: still a
      // line start, where a read resumed gives the same record.
      const lastBreak = this.#lines.offsetOf(this.#breaksBeforePrevEnd + this.#blankBreaks(blank) - 1);
      return lastBreak === undefined ? this.#prevEnd : lastBreak + 1;
    }
    return this.#prevEnd + blank * (this.#engine.options.record_delimiter[0]?.length ?? 1);
  }

  #onRecord(values: string[]): void {
    const info = this.#engine.info;
    const end = this.#engineBase + info.bytes;
    const empty = info.empty_lines;
    const blank = empty - this.#emptyAtPrevEnd;
    const line = 1 + this.#breaksBeforePrevEnd + this.#blankBreaks(blank);
    const offset = this.#recordStart(blank);
    const size = end - offset;
    const invalidUtf8 = this.#utf8.takeRange(this.#prevEnd, end);
    const quoteError = this.#quoteError;
    this.#quoteError = undefined;
    this.#prevEnd = end;
    this.#emptyAtPrevEnd = empty;
    this.#breaksBeforePrevEnd = this.#lines.countBefore(end);

    const columns = this.columns;
    if (columns === null) {
      this.#readHeader(values, line, size, invalidUtf8, quoteError);
      return;
    }
    const rowNumber = ++this.#rowNumber;
    let reason: string | undefined;
    if (size > this.#max) reason = `record longer than ${this.#max} bytes`;
    else if (invalidUtf8) reason = 'invalid UTF-8';
    else if (quoteError !== undefined) reason = describeQuoteError(quoteError, columns);
    else if (values.length !== columns.length) {
      reason = `wrong number of fields (expected ${columns.length}, got ${values.length})${this.#mixedLineEnds(values)}`;
    }
    if (reason === undefined) this.#out.push({ kind: 'record', rowNumber, line, offset, record: this.#toRecord(values) });
    else if (quoteError?.code === 'CSV_INVALID_CLOSING_QUOTE' && this.#breaksBeforePrevEnd > line + this.#extraBreaksOfLineEnd(end)) {
      // A quoted field closed wrongly lines later took in the lines after the record's first: the
      // reader reads them again as rows. (Other quote errors end their record where they are.)
      this.#out.push({ kind: 'error', rowNumber, line, offset, message: `line ${line}: ${reason}`, quoteRanOn: true });
    } else this.#out.push({ kind: 'error', rowNumber, line, offset, message: `line ${line}: ${reason}` });
  }

  #onSkip(error: CsvError | undefined): undefined {
    if (error === undefined) return undefined;
    if (error.code === 'CSV_QUOTE_NOT_CLOSED') {
      // Only raised at the end of the input, and csv-parse then drops the record: report it here.
      const line = this.#pendingLine();
      const first = this.#quoteError;
      this.#quoteError = undefined;
      const reason = `${first === undefined ? '' : `${describeQuoteError(first, this.columns ?? [])}; `}quote not closed: ${RUNS_TO_END}`;
      if (this.columns === null) {
        throw new QuoteBatchError('E_INPUT', `cannot read the header of ${this.#label} (line ${line}): ${reason}`);
      }
      const rowNumber = ++this.#rowNumber;
      this.#out.push({ kind: 'error', rowNumber, line, offset: this.#pendingStart(), message: `line ${line}: ${reason}`, quoteRanOn: true });
      return undefined;
    }
    this.#quoteError ??= error;
    // Let csv-parse read the record to its end, so that its end (line, size) is known and the
    // record comes out to #onRecord, which reports it as an error.
    const state = this.#engine.state;
    state.recordHasError = false;
    // csv-parse stays inside the quoted field after an invalid closing quote and would swallow the
    // following lines into it; ending the quoted part here makes the record end at its line end.
    if (error.code === 'CSV_INVALID_CLOSING_QUOTE') state.quoting = false;
    return undefined;
  }

  /**
   * Said of a record with too many fields that holds bare LF line ends while the header ended with
   * CRLF (a header typed on Windows put before rows exported elsewhere): its lines read as one.
   */
  #mixedLineEnds(values: readonly string[]): string {
    if (this.#recordDelimiter?.length !== 1 || this.#recordDelimiter[0] !== '\r\n' || values.length <= (this.columns?.length ?? Infinity)) return '';
    if (!values.some((value) => /(?<!\r)\n/.test(value))) return '';
    return '; the header line ends with CRLF and the lines after it with LF alone, so they read as one record: give the file one kind of line end (e.g. `sed -i \'s/\\r$//\' file`)';
  }

  /** Line breaks the line end of the record ending at `end` counts beyond one: 1 for CR CR LF (a lone CR, then CR LF). */
  #extraBreaksOfLineEnd(end: number): number {
    return this.#byteAt(end - 1) === LF && this.#byteAt(end - 2) === CR && this.#byteAt(end - 3) === CR ? 1 : 0;
  }

  /**
   * The byte at absolute offset `at`, from the piece being parsed or the two bytes before it: a record
   * ends in the piece that holds its line end's last byte, so its line end is there. Undefined further back.
   */
  #byteAt(at: number): number | undefined {
    const inPiece = at - this.#pieceStart;
    if (inPiece >= 0) return this.#piece[inPiece];
    return this.#beforePiece[this.#beforePiece.length + inPiece];
  }

  #readHeader(values: string[], line: number, size: number, invalidUtf8: boolean, quoteError: CsvError | undefined): void {
    const where = `the header of ${this.#label} (line ${line})`;
    if (size > this.#max) throw new QuoteBatchError('E_INPUT', `${where} is longer than ${this.#max} bytes`);
    if (invalidUtf8) throw new QuoteBatchError('E_INPUT', `${where} is not valid UTF-8`);
    if (quoteError !== undefined) {
      throw new QuoteBatchError('E_INPUT', `cannot read ${where}: ${describeQuoteError(quoteError, values)}`);
    }
    // Columns without a name (a spreadsheet's trailing `;;`) may be many: no mapping can name them.
    const seen = new Map<string, number>();
    for (const [index, name] of values.entries()) {
      if (name === '') continue;
      const earlier = seen.get(name);
      if (earlier !== undefined) {
        throw new QuoteBatchError(
          'E_INPUT',
          `${where} names column ${JSON.stringify(name)} twice (columns ${earlier + 1} and ${index + 1})`,
          { hint: 'a mapping reads columns by name: rename one of them in the header line' },
        );
      }
      seen.set(name, index);
    }
    this.columns = values;
    this.#headerEnd = this.#prevEnd;
    this.#recordDelimiter ??= this.#engine.options.record_delimiter.map((delimiter) => delimiter.toString('utf8'));
    this.#toRecord = makeRecordBuilder(values);
  }

  /** The record being parsed passed the size limit: report it and skip to the next line. */
  #reportPendingTooLong(): void {
    const line = this.#pendingLine();
    if (this.columns === null) {
      throw new QuoteBatchError('E_INPUT', `the header of ${this.#label} (line ${line}) is longer than ${this.#max} bytes`);
    }
    const rowNumber = ++this.#rowNumber;
    const offset = this.#pendingStart();
    this.#out.push({ kind: 'error', rowNumber, line, offset, message: `line ${line}: record longer than ${this.#max} bytes` });
  }

  /** Starts a fresh engine at absolute offset `at`, the start of a line. */
  #restart(at: number): void {
    this.#skipping = false;
    this.#engine = this.#createEngine(false);
    this.#engineBase = at;
    this.#prevEnd = at;
    this.#emptyAtPrevEnd = 0;
    this.#quoteError = undefined;
    this.#breaksBeforePrevEnd = this.#lines.countBefore(at);
  }

  #createEngine(atFileStart: boolean): CsvEngine {
    const options: Options = {
      delimiter: this.#delimiter,
      bom: atFileStart,
      // Records as arrays: this class checks the field count itself and builds the objects.
      columns: false,
      relax_column_count: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      // csv-parse's own limit drops the rest of the input after the first over-long record.
      max_record_size: 0,
      // Known line delimiter: csv-parse's guessing is slow on long lines and may guess again wrongly.
      ...(this.#recordDelimiter === undefined || this.#recordDelimiter.length === 0
        ? {}
        : { record_delimiter: this.#recordDelimiter }),
      on_skip: (error) => this.#onSkip(error),
    };
    const engine = (new Parser(options) as unknown as { api?: CsvEngine }).api;
    if (engine === undefined || typeof engine.parse !== 'function' || typeof engine.state !== 'object') {
      throw new Error('csv-parse has changed: Parser.api.parse is missing (quote-batch needs csv-parse 6)');
    }
    const field = engine.state.field;
    if (field !== undefined && Buffer.isBuffer(field.buf) && typeof field.length === 'number') decodeFieldWithoutView(field);
    return engine;
  }
}

function noop(): void {}

/**
 * The record delimiters of a file whose first line ends with `delimiter`: with `anyLineEnd`, LF and
 * CRLF both (and CR CR LF, with `crCrLf`), whichever of them the header ends with; else the header's own.
 */
export function recordDelimitersFor(delimiter: string, options: Pick<CsvDecoderOptions, 'anyLineEnd' | 'crCrLf'>): string[] {
  if (options.anyLineEnd !== true) return [delimiter];
  if (options.crCrLf === true && (delimiter === '\n' || delimiter === '\r\n' || delimiter === '\r\r\n')) return [...ANY_LINE_END_CRCRLF];
  return delimiter === '\n' || delimiter === '\r\n' ? [...ANY_LINE_END] : [delimiter];
}

/** Index of the first LF or CR (the last byte of a skipped over-long line), or -1. */
function indexOfLineEnd(data: Buffer): number {
  const lf = data.indexOf(LF);
  const cr = lf === -1 ? data.indexOf(CR) : data.subarray(0, lf).indexOf(CR);
  if (cr === -1) return lf;
  // Of a CRLF, skip the LF too.
  return data[cr + 1] === LF ? cr + 1 : cr;
}

function describeQuoteError(error: CsvError, columns: readonly string[]): string {
  const index = (error as { column?: unknown }).column;
  const name = typeof index === 'number' ? columns[index] : undefined;
  const field =
    typeof index === 'number' ? `field ${index + 1}${name === undefined ? '' : ` (${JSON.stringify(name)})`}` : 'a field';
  switch (error.code) {
    case 'CSV_INVALID_CLOSING_QUOTE':
      return `invalid closing quote in ${field}: a closing quote must be followed by the delimiter or the line end`;
    case 'INVALID_OPENING_QUOTE':
      return `unexpected quote in ${field}: only a whole field may be quoted (write a quote inside a quoted field as "")`;
    default:
      return error.message;
  }
}
