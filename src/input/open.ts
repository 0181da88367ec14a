import type { FileHandle } from 'node:fs/promises';
import { open, stat } from 'node:fs/promises';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { QuoteBatchError } from '../errors.js';
import { CsvDecoder } from './_csv-decoder.js';
import type { Decoder } from './_decoder.js';
import { NdjsonDecoder } from './_ndjson-decoder.js';
import { CR, LF, READ_CHUNK_BYTES, StreamingInputReader } from './_streaming-reader.js';
import { detectInput } from './detect.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_RECORD_BYTES } from './types.js';
import type { InputFormat, InputItem, InputOptions, InputReader, InputStart } from './types.js';

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
      : new CsvDecoder({ label: path, delimiter: readDelimiter(options.delimiter, format), maxRecordBytes, anyLineEnd: options.anyLineEnd !== false, crCrLf: options.crCrLf !== false });
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

function noop(): void {}
