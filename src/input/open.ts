import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import type { ReadStream } from 'node:fs';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { QuoteBatchError } from '../errors.js';
import { CsvDecoder } from './_csv-decoder.js';
import type { Decoder } from './_decoder.js';
import { NdjsonDecoder } from './_ndjson-decoder.js';
import { detectInput } from './detect.js';
import { DEFAULT_MAX_RECORD_BYTES } from './types.js';
import type { InputFormat, InputItem, InputOptions, InputReader } from './types.js';

/** Bytes read from the file at a time. */
const READ_CHUNK_BYTES = 64 * 1024;

/**
 * Opens a streaming reader of a CSV, TSV or NDJSON file (each optionally gzip-compressed; the
 * format comes from the extension unless `options.format` is given). Throws
 * `QuoteBatchError('E_INPUT')` if the file cannot be opened (missing, a directory, unreadable), if
 * it has an unknown extension and no format, or, for CSV, if the header cannot be read (an empty
 * file, a header longer than `maxRecordBytes`, not UTF-8, badly quoted or naming a column twice).
 * A header-only CSV file is fine: zero rows. Throws `QuoteBatchError('E_USAGE')` for bad options.
 */
export async function openInput(path: string, options: InputOptions = {}): Promise<InputReader> {
  const { format, gzip } = detectInput(path, options.format);
  const maxRecordBytes = readMaxRecordBytes(options.maxRecordBytes);
  const decoder: Decoder =
    format === 'ndjson'
      ? new NdjsonDecoder({ maxRecordBytes })
      : new CsvDecoder({ label: path, delimiter: readDelimiter(options.delimiter, format), maxRecordBytes });

  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new QuoteBatchError('E_INPUT', `cannot open input file ${path}: ${describeFsError(error)}`, { cause: error });
  }
  let totalBytes: number;
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) throw new Error('it is a directory');
    totalBytes = stats.size;
  } catch (error) {
    await handle.close();
    throw new QuoteBatchError('E_INPUT', `cannot open input file ${path}: ${describeFsError(error)}`, { cause: error });
  }

  const file = handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES });
  const source: Readable = gzip ? pipeline(file, createGunzip(), noop) : file;
  const reader = new StreamingInputReader({ path, format, gzip, decoder, file, source, totalBytes });
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
  #items: (InputItem | undefined)[] = [];
  #head = 0;
  #ended = false;
  #closed = false;

  constructor(parts: ReaderParts) {
    this.#parts = parts;
    this.format = parts.format;
    this.totalBytes = parts.totalBytes;
    this.#chunks = parts.source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  get columns(): readonly string[] | null {
    return this.#parts.decoder.columns;
  }

  get bytesRead(): number {
    return this.#parts.file.bytesRead;
  }

  /** Reads until the CSV header is known (or the input ends). */
  async readHeader(): Promise<void> {
    while (this.#parts.decoder.columns === null && !this.#ended) await this.#fill();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<InputItem, void, undefined> {
    try {
      while (!this.#closed) {
        if (this.#head < this.#items.length) {
          const item = this.#items[this.#head] as InputItem;
          this.#items[this.#head] = undefined;
          this.#head += 1;
          yield item;
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

  /** Reads the next chunk (or the end) into the item queue. */
  async #fill(): Promise<void> {
    const items: InputItem[] = [];
    const { decoder } = this.#parts;
    let next: IteratorResult<Buffer>;
    try {
      next = await this.#chunks.next();
    } catch (error) {
      throw this.#readError(error);
    }
    if (this.#closed) return;
    if (next.done === true) {
      this.#ended = true;
      decoder.end(items);
    } else {
      decoder.write(next.value, items);
    }
    this.#items = items;
    this.#head = 0;
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

function readMaxRecordBytes(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_RECORD_BYTES;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new QuoteBatchError('E_USAGE', `maxRecordBytes must be a positive integer, got ${String(value)}`);
  }
  return value;
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

function describeFsError(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    default:
      return error instanceof Error ? error.message : String(error);
  }
}

function noop(): void {}
