import type { FileHandle } from 'node:fs/promises';
import { open, stat } from 'node:fs/promises';
import type { ReadStream } from 'node:fs';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { QuoteBatchError } from '../errors.js';
import { CsvDecoder, RUNS_TO_END } from './_csv-decoder.js';
import type { Decoder } from './_decoder.js';
import { NdjsonDecoder } from './_ndjson-decoder.js';
import { detectInput } from './detect.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_RECORD_BYTES } from './types.js';
import type { InputFormat, InputItem, InputOptions, InputReader, InputStart } from './types.js';

/** Bytes read from the file at a time. */
const READ_CHUNK_BYTES = 64 * 1024;
/** Bytes fed to the decoder at a time when a record's lines are read again (see `#rereadAfter`). */
const REREAD_PIECE_BYTES = 64;
const LF = 0x0a;
const CR = 0x0d;

/**
 * Opens a streaming reader of a CSV, TSV or NDJSON file (each optionally gzip-compressed; the
 * format comes from the extension unless `options.format` is given). Throws
 * `QuoteBatchError('E_INPUT')` if the file cannot be opened (missing, a directory, unreadable), if
 * it has an unknown extension and no format, or, for CSV, if the header cannot be read (an empty
 * file, a header longer than `maxRecordBytes`, not UTF-8, badly quoted or naming a column twice).
 * A header-only CSV file is fine: zero rows. Throws `QuoteBatchError('E_USAGE')` for bad options.
 *
 * With `options.start`, reading begins at that record (see {@link InputOptions.start}); openInput
 * then also throws `QuoteBatchError('E_INPUT')` if no record can start there. A plain file is read
 * from there on (and its header from the start); a .gz file is decompressed from the start and the
 * bytes before the start are dropped unparsed, so openInput takes a while on a big one.
 */
export async function openInput(path: string, options: InputOptions = {}): Promise<InputReader> {
  let detected: ReturnType<typeof detectInput>;
  try {
    detected = detectInput(path, options.format);
  } catch (error) {
    // A path that is no file (not there, a directory) is named so first, whatever its name.
    const found = await stat(path).then((stats) => (stats.isDirectory() ? new Error('it is a directory') : undefined), (reason: unknown) => reason);
    if (found !== undefined) throw fsError('open', path, found);
    throw error;
  }
  const { format, gzip } = detected;
  const maxRecordBytes = readPositive('maxRecordBytes', options.maxRecordBytes, DEFAULT_MAX_RECORD_BYTES);
  const ndjson = { maxRecordBytes, maxDepth: readPositive('maxDepth', options.maxDepth, DEFAULT_MAX_DEPTH) };
  const { signal } = options;
  const csv =
    format === 'ndjson'
      ? undefined
      : new CsvDecoder({ label: path, delimiter: readDelimiter(options.delimiter, format), maxRecordBytes, anyLineEnd: options.anyLineEnd !== false });
  let start = readStart(options.start);
  // The first line of an NDJSON file is where a plain read starts anyway.
  if (start !== undefined && csv === undefined && start.offset === 0 && start.rowNumber === 1 && start.line === 1) {
    start = undefined;
  }
  const decoder: Decoder = csv ?? new NdjsonDecoder(ndjson);

  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw fsError('open', path, error);
  }
  let totalBytes: number;
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) throw new Error('it is a directory');
    totalBytes = stats.size;
  } catch (error) {
    await handle.close();
    throw fsError('open', path, error);
  }

  // Nothing kept: nothing read again.
  const keepBytes = options.rereadRunOnQuotes === false ? 0 : maxRecordBytes + 2 * READ_CHUNK_BYTES;
  if (start !== undefined) {
    return openInputAt({ path, format, gzip, handle, totalBytes, start, csv, ndjson, signal, keepBytes });
  }
  const file = handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES });
  const source: Readable = gzip ? pipeline(file, createGunzip(), noop) : file;
  const reader = new StreamingInputReader({ path, format, gzip, decoder, file, source, totalBytes, bytesBefore: 0, signal, keepBytes });
  reader.decodeWith(decoder, 0);
  if (format !== 'ndjson') {
    try {
      await reader.readHeader();
    } catch (error) {
      await reader.close();
      throw error;
    }
  }
  return reader;
}

interface ResumeParts {
  path: string;
  format: InputFormat;
  gzip: boolean;
  handle: FileHandle;
  totalBytes: number;
  start: InputStart;
  /** The CSV decoder that reads the header; undefined for NDJSON. */
  csv: CsvDecoder | undefined;
  ndjson: { maxRecordBytes: number; maxDepth: number };
  signal: AbortSignal | undefined;
  keepBytes: number;
}

/** The resumed read of {@link openInput}: finds `start`, checks a record can begin there, reads on. */
async function openInputAt(parts: ResumeParts): Promise<InputReader> {
  const { path, format, gzip, handle, totalBytes, start, csv, ndjson, signal } = parts;
  const refuse = (reason: string): QuoteBatchError =>
    new QuoteBatchError(
      'E_INPUT',
      `cannot resume reading ${path} at byte ${start.offset} (row ${start.rowNumber}, line ${start.line}): ${reason}`,
      { hint: 'read the file from the start' },
    );
  if (start.offset === 0) {
    await handle.close();
    throw refuse(csv === undefined ? 'only row 1, line 1 starts at byte 0' : 'byte 0 is the start of the header');
  }
  if (!gzip && start.offset >= totalBytes) {
    await handle.close();
    throw refuse(`the file is only ${totalBytes} bytes long`);
  }
  if (!gzip && csv !== undefined) {
    try {
      await readHeaderAt(handle, csv, path);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }
  // A .gz file can only be decompressed from its start. A plain one is read from the 64 KiB block
  // holding the byte before the start: the reader sees that byte (to check it ends a line), and the
  // chunks end where a full read's do, so an over-long record is cut where a full read cuts it.
  const skip = gzip ? start.offset : ((start.offset - 1) % READ_CHUNK_BYTES) + 1;
  const streamStart = start.offset - skip;
  const file = handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES, start: streamStart });
  const source: Readable = gzip ? pipeline(file, createGunzip(), noop) : file;
  const reader = new StreamingInputReader({
    path,
    format,
    gzip,
    decoder: csv ?? new NdjsonDecoder(ndjson),
    file,
    source,
    totalBytes,
    bytesBefore: streamStart,
    signal,
    keepBytes: parts.keepBytes,
  });
  try {
    const { before, at, skipped } = await reader.skipPrefix(skip, csv);
    if (at === undefined) {
      throw refuse(`the file is only ${streamStart + skipped} bytes long${gzip ? ' decompressed' : ''}`);
    }
    if (csv !== undefined) {
      if (csv.columns === null || start.offset < csv.headerEnd) {
        throw refuse(`that is inside the header${csv.columns === null ? '' : `, which ends at byte ${csv.headerEnd}`}`);
      }
    }
    // Both formats: a record starts right after a line end. For NDJSON only LF ends a line; in CSV
    // a CR may too, but not the CR of a CRLF (a record starting with that LF would be too rare to
    // be worth counting its lines right).
    if (before === CR && at === LF) throw refuse('that is between the CR and the LF of a line end');
    if (before !== LF && (before !== CR || csv === undefined)) {
      throw refuse(`byte ${start.offset - 1} before it does not end a line, so no record starts there`);
    }
    reader.decodeWith(csv === undefined ? new NdjsonDecoder({ ...ndjson, start }) : csv.continueAt(start), start.offset);
  } catch (error) {
    await reader.close();
    throw error;
  }
  return reader;
}

/**
 * Reads a CSV header with positional reads from the start of the file, leaving the handle free for
 * a read stream from elsewhere. The items of the records read along with it are dropped.
 */
async function readHeaderAt(handle: FileHandle, decoder: CsvDecoder, path: string): Promise<void> {
  const dropped: InputItem[] = [];
  let position = 0;
  while (decoder.columns === null) {
    // A new buffer each time: the decoder may hold on to the bytes of a long first line.
    const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    let bytesRead: number;
    try {
      ({ bytesRead } = await handle.read(buffer, 0, READ_CHUNK_BYTES, position));
    } catch (error) {
      throw fsError('read', path, error);
    }
    if (bytesRead === 0) {
      decoder.end(dropped);
      return;
    }
    decoder.write(buffer.subarray(0, bytesRead), dropped);
    dropped.length = 0;
    position += bytesRead;
  }
}

interface ReaderParts {
  path: string;
  format: InputFormat;
  gzip: boolean;
  decoder: Decoder;
  /** The file itself: its byte count is the progress, its closing is the release. */
  file: ReadStream;
  /** What the decoder reads: the file, or the gunzip stream behind it. */
  source: Readable;
  totalBytes: number;
  /** Where the file stream starts (a resumed read of a plain file): counted as read. */
  bytesBefore: number;
  /** Ends the iteration early when aborted (see InputOptions.signal). */
  signal: AbortSignal | undefined;
  /** CSV: how many bytes back the reader keeps, to read a record's lines again (maxRecordBytes and two chunks); 0: none, nothing is read again. */
  keepBytes: number;
}

/**
 * Pulls one chunk from the source only when every item of the last one has been taken, so at
 * most a chunk's items and the streams' own buffers (64 KiB each) are held, whatever the file size.
 */
class StreamingInputReader implements InputReader {
  readonly format: InputFormat;
  readonly totalBytes: number;
  readonly #parts: ReaderParts;
  readonly #chunks: AsyncIterator<Buffer>;
  #decoder: Decoder;
  /** Chunks read past a skipped prefix (the first one cut), decoded before the next chunk is read. */
  #pending: Buffer[] = [];
  /** Offset in the (decompressed) file of the next byte given to the decoder. */
  #fed = 0;
  /**
   * CSV: the chunks given to the decoder since the start of the last item it gave (and so since the
   * start of any record it has not given yet), with their offsets: what a record whose bad quote ran
   * on took in is read again from them (see {@link #rereadAfter}). At most a record's bytes
   * (`maxRecordBytes`, the decoder cuts a longer one) and a chunk.
   */
  #kept: { offset: number; bytes: Buffer; endsChunk: boolean }[] = [];
  /** Pieces of {@link #pending} fed again that do not end a chunk the file was read in (see `Decoder.write`). */
  readonly #midChunk = new WeakSet<Buffer>();
  #keptBytes = 0;
  #items: (InputItem | undefined)[] = [];
  #head = 0;
  #ended = false;
  #closed = false;

  constructor(parts: ReaderParts) {
    this.#parts = parts;
    this.format = parts.format;
    this.totalBytes = parts.totalBytes;
    this.#decoder = parts.decoder;
    this.#chunks = parts.source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  get columns(): readonly string[] | null {
    return this.#decoder.columns;
  }

  get bytesRead(): number {
    return this.#parts.bytesBefore + this.#parts.file.bytesRead;
  }

  /** Reads until the CSV header is known (or the input ends). */
  async readHeader(): Promise<void> {
    while (this.#decoder.columns === null && !this.#ended) await this.#fill();
  }

  /**
   * Drops the source's first `count` bytes unparsed, except that `header`, while it lacks the
   * columns, is fed the chunks (its items dropped). Returns the last byte dropped, the byte after it
   * (undefined at the end of the input) and how many bytes were dropped.
   */
  async skipPrefix(
    count: number,
    header: CsvDecoder | undefined,
  ): Promise<{ before: number | undefined; at: number | undefined; skipped: number }> {
    const dropped: InputItem[] = [];
    const feedHeader = (chunk: Buffer | undefined): void => {
      if (header === undefined || header.columns !== null) return;
      if (chunk === undefined) header.end(dropped);
      else header.write(chunk, dropped);
      dropped.length = 0;
    };
    let left = count;
    let before: number | undefined;
    let at: number | undefined;
    while (at === undefined) {
      const chunk = await this.#nextChunk();
      feedHeader(chunk);
      if (chunk === undefined) return { before, at, skipped: count - left };
      const cut = Math.min(left, chunk.length);
      if (cut > 0) before = chunk[cut - 1];
      left -= cut;
      if (left === 0 && cut < chunk.length) {
        this.#pending.push(chunk.subarray(cut));
        at = chunk[cut];
      }
    }
    // csv-parse may hold the end of a header that ends just before the start, waiting for more.
    while (header !== undefined && header.columns === null) {
      const chunk = await this.#nextChunk();
      feedHeader(chunk);
      if (chunk === undefined) break;
      this.#pending.push(chunk);
    }
    return { before, at, skipped: count };
  }

  /** Decodes the rest of the input with `decoder`, from byte `offset` of the file on (after {@link skipPrefix}). */
  decodeWith(decoder: Decoder, offset: number): void {
    this.#decoder = decoder;
    this.#fed = offset;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<InputItem, void, undefined> {
    const { signal } = this.#parts;
    try {
      while (!this.#closed && signal?.aborted !== true) {
        if (this.#head < this.#items.length) {
          const item = this.#items[this.#head] as InputItem;
          this.#items[this.#head] = undefined;
          this.#head += 1;
          // A bad quote took in the lines after the record's first: they are read again, as rows
          // (the items after this one, read past them, go).
          if (item.kind === 'error' && item.quoteRanOn === true && this.#rereadAfter(item)) {
            yield { ...item, message: readAlone(item.message) };
          } else {
            yield item;
          }
        } else if (this.#ended) {
          return;
        } else {
          await this.#fill();
        }
      }
    } finally {
      await this.close();
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#items = [];
    this.#head = 0;
    const { file, source } = this.#parts;
    source.destroy();
    file.destroy();
    // Not events.once: it would reject with the stream's error, and a failed read was reported already.
    if (!file.closed) await new Promise<void>((resolve) => file.once('close', () => resolve()));
  }

  /**
   * Decodes the kept bytes after the first line of `bad`, a record whose bad quote ran on, again
   * with a decoder of the records from there (numbered on from `bad`, as a read resumed there
   * would give them), which then reads on. False, and nothing changed, when no line follows.
   * They are fed again in small pieces, so that a file with a bad quote on every line is not
   * decoded again whole after each of them.
   */
  #rereadAfter(bad: Extract<InputItem, { kind: 'error' }>): boolean {
    if (!(this.#decoder instanceof CsvDecoder) || (this.#kept[0]?.offset ?? Infinity) > bad.offset) return false;
    const end = lineEndAfter(this.#kept, bad.offset);
    if (end === undefined || end.next >= this.#fed) return false;
    const { next, breaks } = end;
    this.#decoder = this.#decoder.continueAt({ offset: next, rowNumber: bad.rowNumber + 1, line: bad.line + breaks });
    const again: Buffer[] = [];
    for (const { offset, bytes, endsChunk } of this.#kept) {
      for (let from = Math.max(0, next - offset); from < bytes.length; from += REREAD_PIECE_BYTES) {
        const piece = bytes.subarray(from, from + REREAD_PIECE_BYTES);
        if (from + REREAD_PIECE_BYTES < bytes.length || !endsChunk) this.#midChunk.add(piece);
        again.push(piece);
      }
    }
    this.#pending = [...again, ...this.#pending];
    this.#kept = [];
    this.#keptBytes = 0;
    this.#fed = next;
    this.#ended = false;
    this.#items = [];
    this.#head = 0;
    return true;
  }

  /**
   * Drops the kept chunks that end before the start of the last of `items`, or of the first whose
   * bad quote ran on (its lines are read again from them); none: keeps all.
   */
  #keepFrom(items: readonly InputItem[]): void {
    const from = (items.find((item) => item.kind === 'error' && item.quoteRanOn === true) ?? items.at(-1))?.offset;
    let drop = 0;
    const kept = this.#kept;
    // No record whose lines are read again is longer than maxRecordBytes (a longer one is cut and
    // reported as such): bytes further back are never needed, also while no item comes (a long
    // line being skipped, blank lines).
    while (drop < kept.length - 1 && this.#keptBytes - (kept[drop]?.bytes.length ?? 0) >= this.#parts.keepBytes) {
      this.#keptBytes -= kept[drop]?.bytes.length ?? 0;
      drop += 1;
    }
    if (from !== undefined) {
      while (drop < kept.length && (kept[drop]?.offset ?? 0) + (kept[drop]?.bytes.length ?? 0) <= from) {
        this.#keptBytes -= kept[drop]?.bytes.length ?? 0;
        drop += 1;
      }
    }
    if (drop > 0) kept.splice(0, drop);
  }

  /** Reads the next chunk (or the end) into the item queue. */
  async #fill(): Promise<void> {
    const items: InputItem[] = [];
    const decoder = this.#decoder;
    const chunk = this.#pending.length > 0 ? this.#pending.shift() : await this.#nextChunk();
    if (this.#closed) return;
    if (chunk === undefined) {
      this.#ended = true;
      decoder.end(items);
    } else {
      const endsChunk = !this.#midChunk.has(chunk);
      if (decoder instanceof CsvDecoder && this.#parts.keepBytes > 0) {
        this.#kept.push({ offset: this.#fed, bytes: chunk, endsChunk });
        this.#keptBytes += chunk.length;
      }
      this.#fed += chunk.length;
      decoder.write(chunk, items, endsChunk);
    }
    this.#keepFrom(items);
    this.#items = items;
    this.#head = 0;
  }

  /** The next chunk of the source, or undefined at its end. */
  async #nextChunk(): Promise<Buffer | undefined> {
    let next: IteratorResult<Buffer>;
    try {
      next = await this.#chunks.next();
    } catch (error) {
      throw this.#readError(error);
    }
    return next.done === true ? undefined : next.value;
  }

  #readError(error: unknown): QuoteBatchError {
    const { path, gzip } = this.#parts;
    const reason = error instanceof Error ? error.message : String(error);
    const verb = gzip && !(error instanceof Error && 'syscall' in error) ? 'decompress' : 'read';
    return new QuoteBatchError('E_INPUT', `cannot ${verb} input file ${path}: ${reason} (after ${this.bytesRead} bytes)`, {
      cause: error,
    });
  }
}

function readPositive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new QuoteBatchError('E_USAGE', `${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

/** Checks the shape of `start` (whether a record starts there is checked against the file). */
function readStart(value: InputStart | undefined): InputStart | undefined {
  if (value === undefined) return undefined;
  const { offset, rowNumber, line } = value;
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(rowNumber) || rowNumber < 1 || !Number.isSafeInteger(line) || line < 1) {
    throw new QuoteBatchError(
      'E_USAGE',
      `start must be {offset >= 0, rowNumber >= 1, line >= 1} (integers), got ${JSON.stringify({ offset, rowNumber, line })}`,
    );
  }
  return { offset, rowNumber, line };
}

function readDelimiter(value: string | undefined, format: InputFormat): string {
  if (value === undefined) return format === 'tsv' ? '\t' : ',';
  if (value.length === 0 || value.length > 8 || /["\r\n]/.test(value)) {
    throw new QuoteBatchError(
      'E_USAGE',
      `invalid CSV delimiter ${JSON.stringify(value)}: expected 1 to 8 characters, no quote or line break`,
    );
  }
  return value;
}

/** An E_INPUT error naming the file, the reason in a few words, and what to do. */
function fsError(verb: 'open' | 'read', path: string, error: unknown): QuoteBatchError {
  const code = (error as { code?: unknown } | undefined)?.code;
  const [reason, hint] =
    code === 'ENOENT'
      ? ['no such file', 'check the path; a relative path is read from the working directory']
      : code === 'EACCES' || code === 'EPERM'
        ? ['permission denied', 'make the file readable by the user quote-batch runs as']
        : code === 'EISDIR' || (error instanceof Error && error.message === 'it is a directory')
          ? ['it is a directory', 'name the lead file itself, e.g. exports/leads-2024-05-01.csv']
          : [error instanceof Error ? error.message : String(error), undefined];
  return new QuoteBatchError('E_INPUT', `cannot ${verb} input file ${path}: ${reason}`, { cause: error, hint });
}

/** The message of a record whose bad quote ran on, once the lines after its first are read again. */
function readAlone(message: string): string {
  const alone = 'read as its first line alone, the lines after it as rows';
  return message.includes(RUNS_TO_END) ? message.replace(RUNS_TO_END, alone) : `${message}; ${alone}`;
}

/**
 * The offset just past the first line end (LF, CR LF, a lone CR, or CR CR LF) at or after byte
 * `offset`, in `chunks` (consecutive pieces of the file with their offsets); undefined when none
 * ends there.
 */
function lineEndAfter(chunks: readonly { offset: number; bytes: Buffer }[], offset: number): { next: number; breaks: number } | undefined {
  /** A CR seen (it may go on as CR LF or CR CR LF): where it is, and how many CRs. */
  let crAt = -1;
  let crs = 0;
  for (const { offset: base, bytes } of chunks) {
    for (let i = Math.max(0, offset - base); i < bytes.length; i += 1) {
      const byte = bytes[i];
      if (crAt === -1) {
        if (byte === LF) return { next: base + i + 1, breaks: 1 };
        if (byte === CR) {
          crAt = base + i;
          crs = 1;
        }
      } else if (byte === LF) {
        // CR LF is one line break; CR CR LF two (a lone CR, then CR LF), as the line count has them.
        return { next: crAt + crs + 1, breaks: crs };
      } else if (byte === CR && crs === 1) {
        crs = 2;
      } else {
        return { next: crAt + 1, breaks: 1 };
      }
    }
  }
  return crAt === -1 ? undefined : { next: crAt + 1, breaks: 1 };
}

function noop(): void {}
